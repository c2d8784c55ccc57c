// A restart with an unshipped backlog: the proxy decides before the backlog is indexed (spool.ts
// loadInBackground), and meanwhile says so honestly: GET /v1/policy, `svc policy show` and the
// heartbeat report the records indexed so far with `spool_indexing: true`, never a bare 0 as if
// the spool were empty. The indexing is held with a named pipe (testing/spool-gate.ts).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { PolicyStatus } from "../contract/local-api.ts";
import type { Logger } from "../log/index.ts";
import { segName } from "./audit/spool-files.ts";
import { loadConfig } from "./config.ts";
import { type Daemon, startDaemon } from "./daemon.ts";
import { formatPolicyStatus } from "./policy-show.ts";
import { bundleIdentity, bundleTool, fakeBundle } from "./testing/bundle.ts";
import { fakeRecord } from "./testing/records.ts";
import { daemonEnv, type FakeControlPlane, startFakeControlPlane } from "./testing/fake-control-plane.ts";
import { gateSpoolIndexing } from "./testing/spool-gate.ts";

const TOKEN = "svc_rt_indexing";
const bundle = fakeBundle({
  tools: [bundleTool("crm.read")],
  policies: [{ id: "pol_1", name: "anyone read", src: "*", dst: "tool:crm.read", effect: "permit" }],
  identities: [bundleIdentity("alice")],
});

let dir = "";
let cp: FakeControlPlane;
let daemon: Daemon;
const socket = () => join(dir, "p.sock");
const call = async (path: string, body?: unknown) =>
  fetch(`http://localhost${path}`, {
    unix: socket(),
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  } as RequestInit);
const policy = async () => (await (await call("/v1/policy")).json()) as PolicyStatus;
async function until(what: string, ok: () => Promise<boolean> | boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "svc-spool-indexing-"));
  cp = startFakeControlPlane(bundle, TOKEN);
});

afterAll(async () => {
  await daemon?.shutdown(1000);
  await cp?.stop();
  rmSync(dir, { recursive: true, force: true });
});

test("while a restart's backlog is indexed: /v1/policy, policy show and the heartbeat report the records indexed so far and spool_indexing; then all of it, and it ships", async () => {
  // What an earlier run left: two segments of unshipped records, two of them acknowledged.
  const spool = join(dir, "spool");
  mkdirSync(spool, { recursive: true, mode: 0o700 });
  const older = Array.from({ length: 7 }, () => fakeRecord());
  const newer = Array.from({ length: 5 }, () => fakeRecord());
  writeFileSync(join(spool, segName(1, "jsonl")), older.map((r) => `${JSON.stringify(r)}\n`).join(""));
  writeFileSync(join(spool, segName(1, "acked")), `${older[0]!.id}\n${older[1]!.id}\n`);
  writeFileSync(join(spool, segName(2, "jsonl")), newer.map((r) => `${JSON.stringify(r)}\n`).join(""));
  const gate = gateSpoolIndexing(spool); // indexing stops after segment 2
  const logs: string[] = [];
  const log = Object.fromEntries(["info", "warn", "error"].map((level) => [level, (event: string, fields = {}) => void logs.push(JSON.stringify({ level, event, ...fields }))])) as unknown as Logger;
  daemon = await startDaemon(loadConfig(daemonEnv(cp, dir)), log);
  await until("ready", async () => (await fetch("http://localhost/readyz", { unix: socket() } as RequestInit)).status === 200);

  // Held: the two backlog segments are indexed (5 + 5 unshipped), the rest is not known yet.
  await until("the indexed backlog in spool_depth", async () => (await policy()).spool_depth === 10);
  const decided = await call("/v1/tools/decide", { tool: "crm.read", user: { id: "fe-alice" }, args: {} });
  expect(decided.status).toBe(200);
  const held = await policy();
  expect(held).toMatchObject({ spool_depth: 11, spool_indexing: true });
  expect(formatPolicyStatus(held)).toContain("spool_depth:     at least 11 (still indexing the backlog of earlier runs)");
  await daemon.heartbeat.beat();
  expect(cp.heartbeats.at(-1)!.body).toMatchObject({ spool_depth: 11, spool_indexing: true });
  expect(cp.audit.size).toBe(0); // nothing ships before the backlog is indexed: order kept

  await gate.release();
  await until("indexing to end", async () => (await policy()).spool_indexing === false);
  await until("the backlog and the new record to ship", async () => (await policy()).spool_depth === 0);
  expect(cp.audit.size).toBe(11);
  for (const r of [...older.slice(2), ...newer]) expect(cp.audit.has(r.id)).toBe(true);
  await daemon.heartbeat.beat();
  expect(cp.heartbeats.at(-1)!.body).toMatchObject({ spool_depth: 0, spool_indexing: false });
  expect(formatPolicyStatus(await policy())).toMatch(/spool_depth: +0$/m);
});
