// A full audit-spool disk, for real: the spool is a 3 MiB tmpfs mounted by the test (root
// only; skipped, saying why, otherwise). The proxy fails closed (503 spool_full naming the
// spool), says so (/readyz, GET /v1/policy, `svc policy show`, the heartbeat), and recovers by
// itself, without a restart: when space returns, and when the control plane takes the
// backlog. Every answered decision's record reaches the control plane. An MCP tools/call
// through the gateway while full is an MCP error result naming spool_full (issue 13), and the
// upstream server (the Python SDK's, over https) is never contacted.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Logger } from "../log/index.ts";
import { type NotesServer, startNotesServer, toolServer } from "../../test/support/mcp/servers.ts";
import { testTls } from "../../test/support/tls.ts";
import { loadConfig } from "./config.ts";
import { type Daemon, startDaemon } from "./daemon.ts";
import { signSession } from "./mcp/session-jwt.ts";
import { formatPolicyStatus } from "./policy-show.ts";
import { bundleIdentity, bundleTool, fakeBundle } from "./testing/bundle.ts";
import { daemonEnv, type FakeControlPlane, startFakeControlPlane } from "./testing/fake-control-plane.ts";

const TOKEN = "svc_rt_spool_full";
const SECRET = "chatui-secret-spool-full";
const isRoot = process.getuid?.() === 0;
const canMount = isRoot && Bun.spawnSync(["which", "mount"]).exitCode === 0;
if (!canMount) console.warn("skipped: the full-disk test mounts a tmpfs and needs root (uid 0) and mount(8)");

const bundle = fakeBundle({
  tools: [bundleTool("crm.read"), bundleTool("notes.lookup")],
  policies: [
    { id: "pol_1", name: "anyone read", src: "*", dst: "tool:crm.read", effect: "permit" },
    { id: "pol_2", name: "anyone looks up notes", src: "*", dst: "tool:notes.lookup", effect: "permit" },
  ],
  identities: [bundleIdentity("alice")],
});

let dir = "";
let mnt = "";
let cp: FakeControlPlane;
let daemon: Daemon;
let notes: NotesServer;
const logs: string[] = [];
const socket = () => join(dir, "p.sock");
const call = async (path: string, body?: unknown) =>
  fetch(`http://localhost${path}`, {
    unix: socket(),
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  } as RequestInit);
/** One decision with ~1 KB of arguments; the answer's status and body. */
const decide = async () => {
  const r = await call("/v1/tools/decide", { tool: "crm.read", user: { id: "fe-alice" }, args: { q: "x".repeat(1000) } });
  return { status: r.status, body: (await r.json()) as any };
};
const readyz = async () => {
  const r = await fetch("http://localhost/readyz", { unix: socket() } as RequestInit);
  return { status: r.status, body: (await r.json()) as any };
};
async function until(what: string, ok: () => Promise<boolean> | boolean, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${logs.slice(-20).join("\n")}`);
    await Bun.sleep(50);
  }
}
/** Decide, 16 at a time, until the spool refuses; returns the ids answered and the first refusal. */
async function fillSpool(answered: Set<string>) {
  for (;;) {
    const results = await Promise.all(Array.from({ length: 16 }, decide));
    for (const r of results) if (r.status === 200) answered.add(r.body.record_id);
    const refused = results.find((r) => r.status !== 200);
    if (refused) return refused;
  }
}

beforeAll(async () => {
  if (!canMount) return;
  dir = mkdtempSync(join(tmpdir(), "svc-spool-full-"));
  mnt = join(dir, "mnt");
  mkdirSync(mnt);
  const m = Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=3m,mode=0700", "tmpfs", mnt]);
  if (m.exitCode !== 0) throw new Error(`mount tmpfs failed: ${m.stderr.toString()}`);
  notes = await startNotesServer();
  cp = startFakeControlPlane({ ...bundle, tool_servers: [toolServer.http(notes.url)] }, TOKEN);
  const log: Logger = Object.fromEntries(
    ["info", "warn", "error"].map((level) => [level, (event: string, fields = {}) => void logs.push(JSON.stringify({ level, event, ...fields }))]),
  ) as unknown as Logger;
  const env = daemonEnv(cp, dir, { SVC_PROXY_AUDIT: join(mnt, "spool"), SVC_PROXY_AUDIT_LOW_SPACE: "2MiB", SVC_PROXY_CA_FILE: testTls().caFile, CHATUI_SECRET_KEY: SECRET });
  daemon = await startDaemon(loadConfig(env), log);
  await until("ready", async () => (await readyz()).status === 200);
  await daemon.mcpSettled();
}, 120_000);

afterAll(async () => {
  if (!canMount) return;
  await daemon?.shutdown(1000);
  await cp?.stop();
  await notes?.stop();
  Bun.spawnSync(["umount", "-l", mnt]);
  rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!canMount)("a full audit-spool disk (tmpfs)", () => {
  const answered = new Set<string>();

  test("space runs out: 503 spool_full naming the spool; readyz, policy show and the heartbeat say so; space returns: it resumes without a restart", async () => {
    cp.failAuditBatches = 1e9; // the control plane takes nothing: the backlog stays on the disk
    // Most of the disk goes to an operator's file, so the spool fills fast.
    const junk = join(mnt, "junk.bin");
    writeFileSync(junk, Buffer.alloc(2 * 1024 * 1024));
    const refused = await fillSpool(answered);
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe("spool_full");
    expect(refused.body.error.spool).toBe(join(mnt, "spool"));
    expect(typeof refused.body.error.free_bytes).toBe("number");
    expect(refused.body.error.message).toContain(join(mnt, "spool"));
    expect(answered.size).toBeGreaterThan(0);

    // Fail closed while full, with an honest readiness.
    expect((await decide()).body.error.code).toBe("spool_full");
    // An MCP client (the gateway Open WebUI reaches) gets an MCP error result naming
    // spool_full, not a JSON-RPC internal error; the upstream server never sees the call.
    const mcp = new Client({ name: "test", version: "1" });
    const jwt = signSession({ id: "fe-alice", jti: crypto.randomUUID(), iat: Math.floor(Date.now() / 1000) }, SECRET);
    await mcp.connect(new StreamableHTTPClientTransport(new URL(daemon.mcpUrl!), { requestInit: { headers: { authorization: `Bearer ${jwt}` } } }));
    const upstreamCalls = notes.calls().length;
    const full = await mcp.callTool({ name: "notes.lookup", arguments: { term: "while-full" } });
    expect(full.isError).toBe(true);
    expect((full.content as { text: string }[])[0]!.text).toBe(
      "Refused (governance.unavailable): spool_full: svc's audit spool is full, so no call can be decided until the control plane takes the backlog or space is freed; the tool notes.lookup was not run",
    );
    expect(full._meta?.["svc/error"]).toMatchObject({ code: "spool_full" });
    expect(notes.calls().length).toBe(upstreamCalls);
    await mcp.close();
    const r = await readyz();
    expect(r.status).toBe(503);
    expect(r.body.reason).toStartWith("spool_full:");
    const policy = (await (await call("/v1/policy")).json()) as any;
    expect(policy.spool).toMatchObject({ state: "full", path: join(mnt, "spool") });
    expect(formatPolicyStatus(policy)).toMatch(/reason:\s+spool_full: the audit spool .* is full/);
    expect(formatPolicyStatus(policy)).toMatch(/spool:\s+full \(/);
    // The heartbeat says so at once (its interval here is an hour), for the console.
    await until("a heartbeat saying the spool is full", () => cp.heartbeats.some((h) => h.body.spool_state === "full"));
    expect(logs.some((l) => l.includes("audit spool full"))).toBe(true);

    // The operator frees space: the proxy takes decisions again by itself.
    rmSync(junk);
    await until("readyz 200 after space returned", async () => (await readyz()).status === 200);
    await until("a heartbeat saying it has room again", () => cp.heartbeats.at(-1)!.body.spool_state !== "full");
    const again = await decide();
    expect(again.status).toBe(200);
    answered.add(again.body.record_id);
  }, 120_000);

  test("filled by its own backlog: the control plane taking it frees the disk (no new space needed) and the proxy recovers by itself; nothing answered is lost", async () => {
    const refused = await fillSpool(answered);
    expect(refused.body.error.code).toBe("spool_full");
    expect((await readyz()).status).toBe(503);

    cp.failAuditBatches = 0; // the control plane is back; the shipper's own retry finds it
    await until("every answered record shipped", () => [...answered].every((id) => cp.audit.has(id)), 90_000);
    await until("readyz 200 after shipping", async () => (await readyz()).status === 200);
    expect(daemon.spool.depth).toBe(0);
    const after = await decide();
    expect(after.status).toBe(200);
    await until("the new record shipped", () => cp.audit.has(after.body.record_id));
    expect(cp.audit.size).toBeGreaterThanOrEqual(answered.size + 1);
  }, 180_000);
});
