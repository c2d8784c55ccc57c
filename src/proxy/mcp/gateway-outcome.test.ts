// The answer to a permitted tools/call does not wait for its outcome record's durability
// (issue 34): the outcome is handed to the pipeline before the answer leaves, and the spool's
// next group commit makes it durable. Here the outcome never settles (a spool whose fdatasync
// hangs), and the caller still has its result; the decision is awaited before the upstream runs.
import { expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Logger } from "../../log/index.ts";
import type { Pipeline } from "../pipeline/pipeline.ts";
import type { ProxyStatus } from "../policy/status.ts";
import { createMcpGateway, type GatewayDeps } from "./gateway.ts";
import { signSession } from "./session-jwt.ts";

const SECRET = "outcome-test-secret";
const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} } as unknown as Logger;

test("a permitted call is answered while its outcome record is still being made durable; the decision came first", async () => {
  const events: string[] = [];
  const compiled = { bundle: { tool_servers: [{ name: "everything" }] }, tools: new Map() };
  const pipeline = {
    bundle: () => compiled,
    admit: async () => {
      events.push("decision durable");
      return { permit: true, compiled, record: { id: "rec_1" }, warning: null };
    },
    toolOutcome: async (_c: unknown, ref: string, outcome: string) => {
      events.push(`outcome ${ref} ${outcome} handed over`);
      return new Promise(() => {}); // its fdatasync never returns
    },
  } as unknown as Pipeline;
  const upstream = {
    call: async (_tool: string, args: Record<string, unknown>) => {
      events.push("upstream called");
      return { content: [{ type: "text", text: `Echo: ${String(args.message)}` }] };
    },
  };
  const servers = { entries: () => [], find: () => ({ upstream, entry: { upstream: "echo" } }), reach: async () => ({ error: "no" }) } as unknown as GatewayDeps["servers"];
  const gw = createMcpGateway({ status: {} as ProxyStatus, pipeline, servers, secretKey: SECRET, log: quiet });
  const jwt = signSession({ id: "fe-alice", iat: Math.floor(Date.now() / 1000) }, SECRET);
  const c = new Client({ name: "test", version: "1" });
  const inProcess = (async (u: string | URL, init?: RequestInit) => gw.fetch(new Request(u, init))) as typeof fetch;
  await c.connect(new StreamableHTTPClientTransport(new URL("http://gateway.test/mcp"), { fetch: inProcess, requestInit: { headers: { authorization: `Bearer ${jwt}` } } }));
  const answer = c.callTool({ name: "everything.echo", arguments: { message: "hi" } });
  const r = await Promise.race([answer, Bun.sleep(3000).then(() => "no answer within 3 s")]);
  expect(r).toMatchObject({ content: [{ type: "text", text: "Echo: hi" }] });
  expect(events).toEqual(["decision durable", "upstream called", "outcome rec_1 ok handed over"]);
  await c.close();
  await gw.close();
});
