// Numbers through the MCP gateway exactly (issue 28): an integer beyond 2^53 in a tool call is
// that integer in the policy's condition, in the audit record and in the call the upstream MCP
// server gets (the Python SDK's server, whose ints are exact). Before, the SDK's JSON.parse
// made 9007199254740993 into …992 on the way in.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Decrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type NotesServer, startNotesServer, toolServer } from "../../../test/support/mcp/servers.ts";
import { testTls } from "../../../test/support/tls.ts";
import { JsonNumber } from "../../contract/exact-json.ts";
import type { Logger } from "../../log/index.ts";
import { loadConfig } from "../config.ts";
import { type Daemon, startDaemon } from "../daemon.ts";
import { bundleIdentity, bundleTool, fakeBundle } from "../testing/bundle.ts";
import { daemonEnv, type FakeControlPlane, startFakeControlPlane } from "../testing/fake-control-plane.ts";
import { signSession } from "./session-jwt.ts";

const SECRET = "chatui-secret-for-numbers";
const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} };
let cp: FakeControlPlane;
let daemon: Daemon;
let notes: NotesServer;
let identity: string;
let dir: string;

beforeAll(async () => {
  identity = await generateX25519Identity();
  notes = await startNotesServer();
  const policies = [{ id: "pol_n", name: "one account", src: "*", dst: "tool:notes.count", effect: "permit" as const, condition: "args.n == 9007199254740993" }];
  const recipients = [{ key_id: "key_1", recipient: await identityToRecipient(identity), kind: "customer" as const }];
  cp = startFakeControlPlane(
    fakeBundle({ version: 2, tools: [bundleTool("notes.count")], policies, identities: [bundleIdentity("alice", ["sales"])], recipients, tool_servers: [toolServer.http(notes.url)] }),
    "svc_rt_numbers",
  );
  dir = mkdtempSync(join(tmpdir(), "svc-mcp-num-"));
  daemon = await startDaemon(loadConfig(daemonEnv(cp, dir, { SVC_PROXY_CA_FILE: testTls().caFile, CHATUI_SECRET_KEY: SECRET })), quiet);
  for (let i = 0; i < 1200 && daemon.status.state !== "ready"; i++) await Bun.sleep(50);
  await daemon.mcpSettled();
}, 120_000);

afterAll(async () => {
  await daemon?.shutdown(1000);
  await cp?.stop();
  await notes?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("9007199254740993 reaches the condition, the audit and the MCP server exactly; …992 is refused", async () => {
  const jwt = signSession({ id: "fe-alice", jti: crypto.randomUUID(), iat: Math.floor(Date.now() / 1000) }, SECRET);
  const c = new Client({ name: "test", version: "1" });
  await c.connect(new StreamableHTTPClientTransport(new URL(daemon.mcpUrl!), { requestInit: { headers: { authorization: `Bearer ${jwt}` } } }));
  // JsonNumber writes itself exactly, so the client sends the digits as they are.
  const r = await c.callTool({ name: "notes.count", arguments: { n: new JsonNumber("9007199254740993") } });
  expect(r.isError).toBeFalsy();
  expect(JSON.stringify(r.content)).toContain("counted 9007199254740993");
  const refused = await c.callTool({ name: "notes.count", arguments: { n: new JsonNumber("9007199254740992") } });
  expect((refused.content as { text: string }[])[0]!.text).toBe("Refused (svc.denied): no policy permits tool:notes.count for this user");
  await c.close();
  let rec;
  for (let i = 0; i < 400 && !rec; i++) {
    daemon.shipper.wake();
    rec = [...cp.audit.values()].find((x) => x.action === "tool:notes.count" && x.decision === "permit");
    await Bun.sleep(25);
  }
  const d = new Decrypter();
  d.addIdentity(identity);
  expect(await d.decrypt(Buffer.from(rec!.ciphertext!, "base64"), "text")).toContain('"arguments":{"n":9007199254740993}');
});
