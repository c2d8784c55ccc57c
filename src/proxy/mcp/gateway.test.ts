// The gateway in the daemon, end to end with real MCP software on both sides: the official
// TypeScript SDK client and Open WebUI's own MCPClient (Python, from its venv) in front; the
// Python SDK's MCPServer over https and mcp-server-time over stdio behind.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { Decrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AuditRecord } from "../../contract/audit.ts";
import type { PolicyBundle } from "../../contract/bundle.ts";
import { linesLogger } from "../../log/index.ts";
import { type NotesServer, startNotesServer, toolServer } from "../../../test/support/mcp/servers.ts";
import { OPENWEBUI_PYTHON } from "../../../test/support/openwebui.ts";
import { testTls } from "../../../test/support/tls.ts";
import { loadConfig } from "../config.ts";
import { type Daemon, startDaemon } from "../daemon.ts";
import { bundleIdentity, bundleTool, fakeBundle } from "../testing/bundle.ts";
import { daemonEnv, type FakeControlPlane, startFakeControlPlane } from "../testing/fake-control-plane.ts";
import { signSession } from "./session-jwt.ts";

const TOKEN = "svc_rt_mcp_gateway";
const SECRET = "chatui-secret-for-tests";
const SECRET_ARG = "s3cr3t-term-value";
const lines: string[] = [];
const log = linesLogger(lines);

let cp: FakeControlPlane;
let daemon: Daemon;
let notes: NotesServer;
let identity: string;

const jwt = (id: string) => signSession({ id, jti: crypto.randomUUID(), iat: Math.floor(Date.now() / 1000) }, SECRET);
const registered = ["notes.add_note", "notes.big", "notes.lookup", "notes.slow", "time.convert_time", "time.get_current_time"];

async function bundle(): Promise<PolicyBundle> {
  return fakeBundle({
    version: 2,
    tools: registered.map((name) => bundleTool(name)),
    policies: [
      ...["lookup", "add_note", "slow", "big"].map((t) => ({ id: "pol_1", name: "sales notes", src: "group:sales", dst: `tool:notes.${t}`, effect: "permit" as const })),
      { id: "pol_2", name: "no writes", src: "user:usr_alice", dst: "tool:notes.add_note", effect: "deny" },
      { id: "pol_3", name: "time", src: "*", dst: "tool:time.get_current_time", effect: "permit" },
    ],
    identities: [bundleIdentity("alice", ["sales"]), bundleIdentity("bob")],
    recipients: [{ key_id: "key_1", recipient: await identityToRecipient(identity), kind: "customer" }],
    tool_servers: [toolServer.http(notes.url), toolServer.time()],
  });
}

async function client(user: string): Promise<Client> {
  const c = new Client({ name: "test", version: "1" });
  await c.connect(new StreamableHTTPClientTransport(new URL(daemon.mcpUrl!), { requestInit: { headers: { authorization: `Bearer ${jwt(user)}` } } }));
  return c;
}

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

async function opened(r: AuditRecord): Promise<unknown> {
  const d = new Decrypter();
  d.addIdentity(identity);
  return JSON.parse(await d.decrypt(Buffer.from(r.ciphertext!, "base64"), "text"));
}

/** The pid of this process's child running `name` (the stdio server the daemon started). */
function stdioServerPid(name: string): number {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === process.pid && readFileSync(`/proc/${entry}/cmdline`, "utf8").includes(name)) return Number(entry);
    } catch {}
  }
  throw new Error(`no child process runs ${name}`);
}

async function owuiClient(user: string, steps: [string, unknown][]): Promise<Record<string, any>[]> {
  const argv = [OPENWEBUI_PYTHON, join(import.meta.dir, "../../../test/support/mcp/owui_client.py"), daemon.mcpUrl!, jwt(user), ...steps.flatMap(([n, a]) => [n, JSON.stringify(a)])];
  const p = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe", cwd: tmpdir() });
  return Promise.all([new Response(p.stdout).text(), p.exited]).then(([out]) =>
    out
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l)),
  );
}

beforeAll(async () => {
  identity = await generateX25519Identity();
  notes = await startNotesServer();
  cp = startFakeControlPlane(await bundle(), TOKEN);
  const dir = mkdtempSync(join(tmpdir(), "svc-mcp-gw-"));
  const env = daemonEnv(cp, dir, { SVC_PROXY_CA_FILE: testTls().caFile, CHATUI_SECRET_KEY: SECRET });
  // stdio servers pinged often, so that a hung one is found within the test
  daemon = await startDaemon(loadConfig(env), log, { mcpUpstream: { pingIntervalMs: 200, pingTimeoutMs: 3000 } });
  const end = Date.now() + 60_000;
  while (daemon.status.state !== "ready" && Date.now() < end) await Bun.sleep(50);
  await daemon.mcpSettled();
}, 120_000);

afterAll(async () => {
  await daemon?.shutdown(1000);
  await cp?.stop();
  await notes?.stop();
});

describe("identity", () => {
  test("no credential, a forged or foreign token, an Open WebUI API key: 401, nothing listed", async () => {
    expect(daemon.mcpUrl).toStartWith("http://127.0.0.1:");
    const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } } };
    const post = async (auth: string | null) =>
      fetch(daemon.mcpUrl!, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...(auth ? { authorization: auth } : {}) },
        body: JSON.stringify(init),
      });
    expect((await post(null)).status).toBe(401);
    expect((await post(`Bearer ${signSession({ id: "fe-alice" }, "another-secret")}`)).status).toBe(401);
    const key = await post("Bearer sk-0123456789abcdef");
    expect(key.status).toBe(401);
    expect(JSON.stringify(await key.json())).toContain("API keys are not accepted");
    // a header that code in the front end could set is not an identity
    const headerOnly = await fetch(daemon.mcpUrl!, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "x-openwebui-user-id": "fe-alice", "x-svc-user-id": "fe-alice" },
      body: JSON.stringify(init),
    });
    expect(headerOnly.status).toBe(401);
  });

  test("a session belongs to the user who opened it: another user's token on it is refused", async () => {
    const alice = await client("fe-alice");
    const sid = (alice.transport as StreamableHTTPClientTransport).sessionId!;
    const res = await fetch(daemon.mcpUrl!, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        authorization: `Bearer ${jwt("fe-bob")}`,
        "mcp-session-id": sid,
        "mcp-protocol-version": "2025-06-18",
      },
      body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }),
    });
    expect(res.status).toBe(403);
    await alice.close();
  });
});

describe("tools/list", () => {
  test("offers each user only the registered tools policy permits them", async () => {
    const alice = await client("fe-alice");
    expect((await alice.listTools()).tools.map((t) => t.name).sort()).toEqual(["notes.big", "notes.lookup", "notes.slow", "time.get_current_time"]);
    const lookup = (await alice.listTools()).tools.find((t) => t.name === "notes.lookup")!;
    expect(lookup.inputSchema.properties).toHaveProperty("term");
    await alice.close();
    const bob = await client("fe-bob");
    expect((await bob.listTools()).tools.map((t) => t.name)).toEqual(["time.get_current_time"]);
    await bob.close();
    const carol = await client("fe-carol"); // unlinked: policy permits nothing yet
    expect((await carol.listTools()).tools).toEqual([]);
    await carol.close();
  });
});

describe("tools/call", () => {
  test("permit: audited (encrypted arguments, the server named) before the upstream sees it, then an ok outcome", async () => {
    const alice = await client("fe-alice");
    const r = await alice.callTool({ name: "notes.lookup", arguments: { term: SECRET_ARG } });
    expect(r.isError).toBeFalsy();
    expect(JSON.stringify(r.content)).toContain(`note about ${SECRET_ARG}`);
    expect(
      notes
        .calls()
        .filter((c) => c.tool === "lookup")
        .at(-1),
    ).toEqual({ tool: "lookup", args: { term: SECRET_ARG } });
    const rec = await shipped((x) => x.action === "tool:notes.lookup" && x.kind === "tool", "the permit");
    expect(rec).toMatchObject({ decision: "permit", reason: "policy", policy_id: "pol_1", tool_name: "notes.lookup", tool_server: "notes", recipient_key_ids: ["key_1"] });
    expect(rec.subject).toEqual({ user_id: "usr_alice", remote_user_id: "fe-alice", via_installation: false });
    expect(await opened(rec)).toMatchObject({ arguments: { term: SECRET_ARG } });
    const outcome = await shipped((x) => x.kind === "outcome" && x.ref === rec.id, "the outcome");
    expect(outcome).toMatchObject({ outcome: "ok", tool_server: "notes", action: "tool:notes.lookup" });
    expect(lines.join("\n")).not.toContain(SECRET_ARG);
    await alice.close();
  });

  test("deny: the spec's refusal as an MCP error result; the upstream is never contacted", async () => {
    const before = notes.calls().length;
    const alice = await client("fe-alice");
    const r = await alice.callTool({ name: "notes.add_note", arguments: { text: "never" } });
    expect(r.isError).toBe(true);
    expect((r.content as { text: string }[])[0]!.text).toBe('Refused (svc.denied): policy "no writes" denies tool:notes.add_note');
    const bob = await client("fe-bob");
    const r2 = await bob.callTool({ name: "notes.lookup", arguments: { term: "x" } });
    expect((r2.content as { text: string }[])[0]!.text).toStartWith("Refused (svc.denied)");
    const unknown = await bob.callTool({ name: "notes.nope", arguments: {} });
    // the spec's code first, then which tool of which server, for an MCP client
    expect((unknown.content as { text: string }[])[0]!.text).toBe(
      'tool_not_registered: the MCP server "notes" has no tool "nope" registered for this agent (svc tool-servers show notes lists them); the tool was not run',
    );
    expect(notes.calls().length).toBe(before);
    const rec = await shipped((x) => x.action === "tool:notes.add_note", "the deny");
    expect(rec).toMatchObject({ decision: "deny", reason: "svc.denied", tool_server: "notes" });
    await alice.close();
    await bob.close();
  });

  test("stdio upstream: mcp-server-time answers through the gateway", async () => {
    const bob = await client("fe-bob");
    const r = await bob.callTool({ name: "time.get_current_time", arguments: { timezone: "UTC" } });
    expect(r.isError).toBeFalsy();
    expect(JSON.stringify(r.content)).toContain("UTC");
    await bob.close();
  });

  test("a stdio server that dies: a call starts it again at once, not after the backoff or the next poll, and a new process answers; every call has its decision and outcome", async () => {
    // (a server that stays down ends each call unreachable, a permit with an error outcome:
    // third-party.test.ts "servers that fail", and the end-to-end scenario 18)
    const pid = stdioServerPid("mcp-server-time");
    process.kill(pid, "SIGKILL");
    const bob = await client("fe-bob");
    const end = Date.now() + 30_000;
    let r = await bob.callTool({ name: "time.get_current_time", arguments: { timezone: "UTC" } });
    while (r.isError && Date.now() < end) {
      await Bun.sleep(20);
      r = await bob.callTool({ name: "time.get_current_time", arguments: { timezone: "UTC" } });
    }
    expect(r.isError).toBeFalsy();
    expect(stdioServerPid("mcp-server-time")).not.toBe(pid);
    const rec = await shipped(
      (x) => x.action === "tool:time.get_current_time" && x.kind === "tool" && x.subject.user_id === "usr_bob" && [...cp.audit.values()].some((o) => o.ref === x.id && o.outcome === "ok"),
      "the answered call's decision and ok outcome",
    );
    expect(rec.tool_server).toBe("time");
    await bob.close();
  }, 90_000);

  test("a stdio server that hangs (SIGSTOP): its ping goes unanswered, it is killed, and the next call starts it again at once and is answered by the new process", async () => {
    const pid = stdioServerPid("mcp-server-time");
    const hungLine = (l: string) => l.includes('"mcp server unreachable"') && l.includes('"server":"time"') && l.includes("stopped answering");
    const before = lines.filter(hungLine).length;
    process.kill(pid, "SIGSTOP");
    const end = Date.now() + 60_000;
    while (lines.filter(hungLine).length === before && Date.now() < end) await Bun.sleep(20);
    expect(lines.filter(hungLine).length).toBe(before + 1);
    // found hung and killed: the next call does not wait for the restart's backoff or the next
    // poll, it starts the server again at once and is answered by the new process
    const bob = await client("fe-bob");
    const r = await bob.callTool({ name: "time.get_current_time", arguments: { timezone: "Asia/Tokyo" } });
    expect(r.isError).toBeFalsy();
    expect(JSON.stringify(r.content)).toContain("Asia/Tokyo");
    expect(existsSync(`/proc/${pid}`)).toBe(false);
    expect(stdioServerPid("mcp-server-time")).not.toBe(pid);
    expect(lines.some((l) => l.includes('"mcp server reached again"') && l.includes('"server":"time"'))).toBe(true);
    await bob.close();
  }, 120_000);

  test("cancellation reaches the upstream; an oversized result is refused by its limit; both leave an error outcome", async () => {
    const alice = await client("fe-alice");
    const ac = new AbortController();
    const p = alice.callTool({ name: "notes.slow", arguments: { seconds: 5 } }, undefined, { signal: ac.signal });
    const end = Date.now() + 10_000;
    while (!notes.calls().some((c) => c.tool === "slow") && Date.now() < end) await Bun.sleep(20);
    ac.abort();
    await expect(p).rejects.toThrow();
    const slow = await shipped((x) => x.action === "tool:notes.slow" && x.kind === "tool", "the slow permit");
    expect(await shipped((x) => x.kind === "outcome" && x.ref === slow.id, "the cancelled outcome")).toMatchObject({ outcome: "error" });
    while (!notes.calls().some((c) => c.tool === "slow.cancelled") && Date.now() < end) await Bun.sleep(20);
    expect(notes.calls().some((c) => c.tool === "slow.cancelled")).toBe(true);

    const big = await alice.callTool({ name: "notes.big", arguments: { kib: 5 * 1024 } });
    expect(big.isError).toBe(true);
    expect((big.content as { text: string }[])[0]!.text).toContain("MCP_RESULT_LIMIT_BYTES");
    const bigRec = await shipped((x) => x.action === "tool:notes.big" && x.kind === "tool", "the big permit");
    expect(await shipped((x) => x.kind === "outcome" && x.ref === bigRec.id, "the big outcome")).toMatchObject({ outcome: "error" });
    await alice.close();
  }, 60_000);
});

describe("Open WebUI's own MCP client", () => {
  test.skipIf(!existsSync(OPENWEBUI_PYTHON))(
    "permit runs; an unlinked user gets Refused (identity.unlinked) and the claim link as an elicitation to their session alone",
    async () => {
      const claimsBefore = cp.claims.length;
      // both Python clients at once: each imports Open WebUI, which is slow on a loaded machine
      const [alice, carol] = await Promise.all([owuiClient("fe-alice", [["notes.lookup", { term: "owui" }]]), owuiClient("fe-carol", [["notes.lookup", { term: "x" }]])]);
      expect(alice.find((s) => s.tools)?.tools.map((t: { name: string }) => t.name)).toContain("notes.lookup");
      expect(JSON.stringify(alice.find((s) => s.call === "notes.lookup")?.result)).toContain("note about owui");

      const refused = carol.find((s) => s.call === "notes.lookup")!;
      expect(refused.error).toBe("Refused (identity.unlinked)");
      const events = carol.filter((s) => s.event).map((s) => s.event);
      expect(events).toHaveLength(1);
      expect(events[0]).toMatchObject({ type: "request:elicitation", data: { mode: "url", server_name: "svc" } });
      expect(events[0].data.url).toStartWith(`${cp.url}/claim/`);
      expect(cp.claims.length).toBe(claimsBefore + 1);
      expect(cp.claims.at(-1)).toMatchObject({ remote_user_id: "fe-carol" });
      // the link is in the event to the user's session, never in the tool result the model reads
      expect(JSON.stringify(refused)).not.toContain("/claim/");
      expect(notes.calls().some((c) => c.args.term === "x")).toBe(false);
      const rec = await shipped((x) => x.action === "tool:notes.lookup" && x.reason === "identity.unlinked", "the unlinked refusal");
      expect(rec.subject).toEqual({ user_id: null, remote_user_id: "fe-carol", via_installation: true });
    },
    180_000,
  );
});
