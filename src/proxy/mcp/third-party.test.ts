// The MCP servers customers actually run (issue 31), through the gateway in the daemon:
// @modelcontextprotocol/server-everything over stdio and over Streamable HTTP (behind TLS),
// @modelcontextprotocol/server-filesystem over stdio, driven by the official TypeScript SDK
// client as Open WebUI drives its own. Each point of the issue: any tool name (kebab-case,
// every tool of server-everything served), tool:<server>.* policies, listing with conditions,
// progress, cancellation, an elicitation to the calling user alone, no sampling offered,
// oversized requests as MCP errors, a registered tool whose server is down ending
// "unreachable" (an error outcome, not a deny), and a hung server found under load.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema, GetPromptResultSchema, ListPromptsResultSchema, ListResourcesResultSchema, McpError, ReadResourceResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AuditRecord } from "../../contract/audit.ts";
import { linesLogger } from "../../log/index.ts";
import { EVERYTHING_JS, type EverythingHttp, npmToolServer, startEverythingHttp } from "../../../test/support/mcp/servers.ts";
import { testTls } from "../../../test/support/tls.ts";
import { loadConfig } from "../config.ts";
import { type Daemon, startDaemon } from "../daemon.ts";
import { bundleIdentity, bundleTool, fakeBundle } from "../testing/bundle.ts";
import { daemonEnv, type FakeControlPlane, startFakeControlPlane } from "../testing/fake-control-plane.ts";
import { signSession } from "./session-jwt.ts";

const TOKEN = "svc_rt_mcp_third_party";
const SECRET = "chatui-secret-third-party";
const lines: string[] = [];
const log = linesLogger(lines);

let cp: FakeControlPlane;
let daemon: Daemon;
let http: EverythingHttp;
let files: string;

const jwt = (id: string) => signSession({ id, jti: crypto.randomUUID(), iat: Math.floor(Date.now() / 1000) }, SECRET);

async function client(user: string, o: { onElicit?: (params: unknown) => unknown } = {}): Promise<Client> {
  const c = new Client({ name: "test", version: "1" }, o.onElicit ? { capabilities: { elicitation: { form: {} } } } : {});
  if (o.onElicit) c.setRequestHandler(ElicitRequestSchema, async (req) => o.onElicit!(req.params) as never);
  await c.connect(new StreamableHTTPClientTransport(new URL(daemon.mcpUrl!), { requestInit: { headers: { authorization: `Bearer ${jwt(user)}` } } }));
  return c;
}

const text = (r: object) => ((r as { content?: { text?: string }[] }).content ?? []).map((c) => c.text ?? "").join("");

async function shipped(pred: (r: AuditRecord) => boolean, what: string): Promise<AuditRecord> {
  const end = Date.now() + 20_000;
  for (;;) {
    daemon.shipper.wake();
    const hit = [...cp.audit.values()].find(pred);
    if (hit) return hit;
    if (Date.now() > end) throw new Error(`no shipped audit record: ${what}`);
    await Bun.sleep(50);
  }
}

async function until(check: () => boolean | Promise<boolean>, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${lines.slice(-15).join("\n")}`);
    await Bun.sleep(50);
  }
}

/** The pid of this process's child whose command line holds all of `parts`. */
function childPid(...parts: string[]): number {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (ppid === process.pid && parts.every((p) => cmd.includes(p))) return Number(entry);
    } catch {}
  }
  throw new Error(`no child process runs ${parts.join(" ")}`);
}

beforeAll(async () => {
  http = await startEverythingHttp();
  files = mkdtempSync(join(tmpdir(), "svc-mcp-files-"));
  writeFileSync(join(files, "hello.txt"), "hello from the filesystem server\n");
  cp = startFakeControlPlane(
    fakeBundle({
      version: 2,
      // `gone.lookup` is registered for the agent (another installation listed it) while this
      // replica's `gone` server never starts.
      tools: [bundleTool("gone.lookup")],
      policies: [
        ...["everything", "everything-http", "files", "gone"].map((s, i) => ({ id: `pol_${i}`, name: `sales use ${s}`, src: "group:sales", dst: `tool:${s}.*`, effect: "permit" as const })),
        { id: "pol_sum", name: "bob sums small numbers", src: "user:usr_bob", dst: "tool:everything.get-sum", effect: "permit", condition: "args.a < 10" },
        { id: "pol_secret", name: "no secret files", src: "group:sales", dst: "tool:files.write_file", effect: "deny", condition: 'args.path.contains("secret")' },
      ],
      identities: [bundleIdentity("alice", ["sales"]), bundleIdentity("bob"), bundleIdentity("carol", ["sales"])],
      tool_servers: [
        npmToolServer.everything(),
        { ...npmToolServer.everything(), id: "ts_everything_http", name: "everything-http", transport: "http", url: http.url, command: null, args: [] },
        npmToolServer.files(files),
        { ...npmToolServer.everything(), id: "ts_gone", name: "gone", args: ["-e", "process.exit(3)"] },
      ],
    }),
    TOKEN,
  );
  const dir = mkdtempSync(join(tmpdir(), "svc-mcp-3p-"));
  const env = daemonEnv(cp, dir, { SVC_PROXY_CA_FILE: testTls().caFile, CHATUI_SECRET_KEY: SECRET, SVC_PROXY_ALLOW_PRIVATE_OUTBOUND: "127.0.0.1" });
  daemon = await startDaemon(loadConfig(env), log, { mcpUpstream: { pingIntervalMs: 300, pingTimeoutMs: 2000 } });
  await until(() => daemon.status.state === "ready", "ready", 60_000);
  await daemon.mcpSettled();
  await until(
    () =>
      cp.bundle.tools.some((t) => t.name === "everything.get-sum") &&
      cp.bundle.tools.some((t) => t.name === "everything-http.get-sum") &&
      cp.bundle.tools.some((t) => t.name === "files.read_text_file"),
    "the servers' tools registered",
  );
  await until(() => daemon.status.compiled?.revision === cp.bundle.revision, "the proxy on the bundle with them");
}, 120_000);

afterAll(async () => {
  await daemon?.shutdown(1000);
  await cp?.stop();
  await http?.stop();
});

describe("any tool name", () => {
  test("every tool server-everything lists is registered and served under its own kebab-case name, over stdio and HTTP; filesystem's snake_case too", async () => {
    const listed = cp.mcpReports.flatMap((r) => r.servers);
    const everything = listed.findLast((s) => s.server === "everything")!;
    expect(everything.skipped).toEqual([]);
    expect(everything.tools.length).toBeGreaterThanOrEqual(12);
    expect(everything.tools.every((t) => t.name === `everything.${t.upstream}`)).toBe(true);
    expect(everything.tools.map((t) => t.upstream)).toContain("trigger-long-running-operation");
    const alice = await client("fe-alice");
    const names = (await alice.listTools()).tools.map((t) => t.name);
    for (const t of everything.tools) expect(names).toContain(t.name);
    expect(names).toContain("everything-http.get-sum");
    expect(names).toContain("files.read_text_file");
    for (const server of ["everything", "everything-http"]) {
      const r = await alice.callTool({ name: `${server}.get-sum`, arguments: { a: 2, b: 3 } });
      expect(r.isError).toBeFalsy();
      expect(text(r)).toContain("5");
    }
    const read = await alice.callTool({ name: "files.read_text_file", arguments: { path: join(files, "hello.txt") } });
    expect(text(read)).toContain("hello from the filesystem server");
    const rec = await shipped((x) => x.action === "tool:everything.get-sum" && x.kind === "tool" && x.subject.user_id === "usr_alice", "the hyphenated call's permit");
    expect(rec).toMatchObject({ decision: "permit", tool_name: "everything.get-sum", tool_server: "everything" });
    await alice.close();
  });

  test("a tool:<server>.* policy permits every tool of that server and no other's", async () => {
    const bob = await client("fe-bob");
    // bob is not in sales: the prefix permits give him nothing; his one conditional permit lists one tool
    expect((await bob.listTools()).tools.map((t) => t.name)).toEqual(["everything.get-sum"]);
    const r = await bob.callTool({ name: "everything.echo", arguments: { message: "hi" } });
    expect(text(r)).toStartWith("Refused (svc.denied)");
    await bob.close();
  });
});

describe("listing with conditions", () => {
  test("a conditional permit lists the tool; each call is decided with its arguments, both ways", async () => {
    const bob = await client("fe-bob");
    const small = await bob.callTool({ name: "everything.get-sum", arguments: { a: 1, b: 2 } });
    expect(small.isError).toBeFalsy();
    expect(text(small)).toContain("3");
    const big = await bob.callTool({ name: "everything.get-sum", arguments: { a: 100, b: 2 } });
    expect(big.isError).toBe(true);
    expect(text(big)).toBe("Refused (svc.denied): no policy permits tool:everything.get-sum for this user");
    await shipped((x) => x.action === "tool:everything.get-sum" && x.subject.user_id === "usr_bob" && x.decision === "deny", "bob's refused sum");
    await bob.close();
  });

  test("a conditional deny does not hide the tool; it refuses the calls it names", async () => {
    const alice = await client("fe-alice");
    expect((await alice.listTools()).tools.map((t) => t.name)).toContain("files.write_file");
    const refused = await alice.callTool({ name: "files.write_file", arguments: { path: join(files, "secret.txt"), content: "x" } });
    expect(text(refused)).toBe('Refused (svc.denied): policy "no secret files" denies tool:files.write_file');
    const ok = await alice.callTool({ name: "files.write_file", arguments: { path: join(files, "notes.txt"), content: "written through svc" } });
    expect(ok.isError).toBeFalsy();
    expect(readFileSync(join(files, "notes.txt"), "utf8")).toBe("written through svc");
    expect(() => readFileSync(join(files, "secret.txt"))).toThrow();
    await alice.close();
  });
});

describe("the protocol", () => {
  test.each(["everything", "everything-http"])("%s: progress notifications reach the caller", async (server) => {
    const alice = await client("fe-alice");
    const seen: number[] = [];
    const r = await alice.callTool({ name: `${server}.trigger-long-running-operation`, arguments: { duration: 0.6, steps: 3 } }, undefined, { onprogress: (p) => void seen.push(p.progress) });
    expect(r.isError).toBeFalsy();
    expect(seen).toEqual([1, 2, 3]);
    await alice.close();
  });

  test("cancellation by the caller ends the call as an error outcome", async () => {
    const alice = await client("fe-alice");
    const ac = new AbortController();
    const p = alice.callTool({ name: "everything.trigger-long-running-operation", arguments: { duration: 20, steps: 20 } }, undefined, { signal: ac.signal, onprogress: () => ac.abort() });
    await expect(p).rejects.toThrow();
    const rec = await shipped(
      (x) => x.action === "tool:everything.trigger-long-running-operation" && x.kind === "tool" && [...cp.audit.values()].some((o) => o.ref === x.id && o.outcome === "error"),
      "the cancelled call's error outcome",
    );
    expect(rec.decision).toBe("permit");
    await alice.close();
  });

  test.each(["everything", "everything-http"])("%s: an elicitation reaches the calling user alone, and the answer goes back to the server", async (server) => {
    const asked: string[] = [];
    const alice = await client("fe-alice", {
      onElicit: () => (
        asked.push("alice"),
        {
          action: "accept",
          content: { name: "Alice", check: true, firstLine: "Once", email: "a@example.com", homepage: "https://a.example.com", birthdate: "2000-01-01", integer: 3, number: 1.5, enum: "Option A" },
        }
      ),
    });
    const carol = await client("fe-carol", { onElicit: () => (asked.push("carol"), { action: "decline" }) });
    await carol.listTools();
    const r = await alice.callTool({ name: `${server}.trigger-elicitation-request`, arguments: {} });
    expect(asked).toEqual(["alice"]);
    expect(text(r)).toContain("Alice");
    await alice.close();
    await carol.close();
  });

  test("a client that takes no elicitations: the server's request is declined, never shown to anyone else", async () => {
    const bobless = await client("fe-carol");
    const r = await bobless.callTool({ name: "everything.trigger-elicitation-request", arguments: {} });
    expect(text(r).toLowerCase()).toMatch(/decline|not support|elicitation/);
    await bobless.close();
  });

  test("sampling is not offered: svc declares no sampling capability, so the server lists no sampling tool", async () => {
    const alice = await client("fe-alice");
    const names = (await alice.listTools()).tools.map((t) => t.name);
    expect(names.some((n) => n.includes("sampling"))).toBe(false);
    await alice.close();
  });

  test("resources and prompts are out of scope: not declared, and answered Method not found although server-everything has both", async () => {
    const alice = await client("fe-alice");
    expect(alice.getServerCapabilities()?.resources).toBeUndefined();
    expect(alice.getServerCapabilities()?.prompts).toBeUndefined();
    const asked = [
      ["resources/list", {}, ListResourcesResultSchema],
      ["resources/read", { uri: "demo://resource/static/document/architecture.md" }, ReadResourceResultSchema],
      ["prompts/list", {}, ListPromptsResultSchema],
      ["prompts/get", { name: "simple-prompt" }, GetPromptResultSchema],
    ] as const;
    for (const [method, params, schema] of asked) {
      const err = await alice.request({ method, params } as never, schema).catch((e: unknown) => e);
      expect([method, (err as McpError).code]).toEqual([method, -32601]);
    }
    await alice.close();
  });

  test("a request over the limit is that request's MCP error; the session goes on", async () => {
    const alice = await client("fe-alice");
    const err = await alice.callTool({ name: "everything.echo", arguments: { message: "x".repeat(2 * 1024 * 1024) } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(McpError);
    expect((err as McpError).code).toBe(-32600);
    expect((err as McpError).message).toContain("MCP_REQUEST_LIMIT_BYTES");
    const after = await alice.callTool({ name: "everything.echo", arguments: { message: "still here" } });
    expect(text(after)).toContain("still here");
    await alice.close();
  });
});

describe("servers that fail", () => {
  test("a tool registered for the agent whose server this replica cannot run ends unreachable: a permit and an error outcome, never a deny", async () => {
    const alice = await client("fe-alice");
    const r = await alice.callTool({ name: "gone.lookup", arguments: { q: "x" } });
    expect(r.isError).toBe(true);
    expect(text(r)).toStartWith('MCP server "gone" is unreachable from this runtime');
    const rec = await shipped((x) => x.action === "tool:gone.lookup" && x.kind === "tool", "the unreachable call");
    expect(rec.decision).toBe("permit");
    expect(await shipped((x) => x.kind === "outcome" && x.ref === rec.id, "its outcome")).toMatchObject({ outcome: "error" });
    // nothing this replica failed to list was reported: the tool stays registered
    expect(cp.mcpReports.flatMap((x) => x.servers).some((s) => s.server === "gone")).toBe(false);
    expect(cp.bundle.tools.some((t) => t.name === "gone.lookup")).toBe(true);
    await alice.close();
  });

  test("a stdio server that hangs under load is found by its ping while a call is in flight, not by the call's timeout", async () => {
    const pid = childPid(EVERYTHING_JS, "stdio");
    const alice = await client("fe-alice");
    const started = Date.now();
    let progressed = false;
    const call = alice.callTool({ name: "everything.trigger-long-running-operation", arguments: { duration: 60, steps: 60 } }, undefined, { onprogress: () => void (progressed = true) });
    await until(() => progressed, "the long call under way");
    process.kill(pid, "SIGSTOP");
    const r = await call;
    expect(r.isError).toBe(true);
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(lines.some((l) => l.includes("stopped answering") && l.includes('"server":"everything"'))).toBe(true);
    await until(() => {
      try {
        return childPid(EVERYTHING_JS, "stdio") !== pid;
      } catch {
        return false;
      }
    }, "a new process");
    const again = await alice.callTool({ name: "everything.get-sum", arguments: { a: 1, b: 1 } });
    expect(text(again)).toContain("2");
    await alice.close();
  }, 60_000);
});
