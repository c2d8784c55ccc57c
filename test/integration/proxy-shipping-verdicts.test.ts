// Shipping by explicit verdicts (issue 28), on the real stack: the proxy ships its audit
// records through an HTTP ingress in front of the real control plane, as a deployment may have
// one. The ingress refuses audit batches over its body limit with 413 (as nginx's
// client_max_body_size does), a status for the whole request that says nothing about any one
// record: 300 of 300 records stay in the spool (none set aside), the failure is counted in the
// metrics and logged, and everything ships once the limit is raised. Records set aside earlier
// (156695b moved all 300 into rejected.jsonl on that 413) ship with `svc proxy spool replay`.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type ControlPlaneProcess, startControlPlane, svcCommand } from "../support/controlplane-process.ts";
import { addPolicy, adminApi, type Api, auditRecordsOf, type ProxyProcess, proxyDirs, proxyEnv, type Scenario, setUpScenario, startProxy, waitFor } from "../../src/proxy/testing/integration.ts";

setDefaultTimeout(120_000);
let cp: ControlPlaneProcess;
let api: Api;
let s: Scenario;
let ingress: ReturnType<typeof Bun.serve>;
/** The ingress's body limit for audit batches, in bytes. */
let auditLimit = 0;
let dirs = proxyDirs();
const used = [dirs];

function proxy(): ProxyProcess {
  return startProxy(proxyEnv(`http://127.0.0.1:${ingress.port}`, s.runtimeToken, { SVC_PROXY_POLL_INTERVAL: "1s" }, dirs));
}

const metric = async (px: ProxyProcess, series: string) => {
  const text = await (await px.call("/metrics")).text();
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? null : Number(line.slice(series.length + 1));
};

beforeAll(async () => {
  cp = await startControlPlane();
  api = adminApi(cp);
  s = await setUpScenario(api, "verdicts");
  await addPolicy(api, s, "*", "tool:crm.read");
  ingress = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const u = new URL(req.url);
      if (u.pathname === "/api/v1/runtime/audit-records" && Number(req.headers.get("content-length") ?? 0) > auditLimit) {
        return new Response("<html><head><title>413 Request Entity Too Large</title></head><body><center><h1>413 Request Entity Too Large</h1></center></body></html>", {
          status: 413,
          headers: { "content-type": "text/html" },
        });
      }
      const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
      const up = await fetch(`${cp.url}${u.pathname}${u.search}`, { method: req.method, headers: req.headers, body, redirect: "manual" });
      return new Response(up.status === 304 || up.status === 204 ? null : await up.arrayBuffer(), { status: up.status, headers: up.headers });
    },
  });
});

afterAll(async () => {
  await ingress?.stop(true);
  await cp?.stop();
  for (const d of used) rmSync(join(d.stateDir, ".."), { recursive: true, force: true });
});

/** The ids of the spool's records not yet acknowledged, read from its files as an operator would. */
function unacknowledged(): { id: string; line: string }[] {
  const out: { id: string; line: string }[] = [];
  for (const f of readdirSync(dirs.spool).filter((n) => /^seg-\d+\.jsonl$/.test(n))) {
    const acked = new Set(existsSync(join(dirs.spool, f.replace(".jsonl", ".acked"))) ? readFileSync(join(dirs.spool, f.replace(".jsonl", ".acked")), "utf8").split("\n") : []);
    for (const line of readFileSync(join(dirs.spool, f), "utf8").split(/[\n\0]+/)) {
      if (!line.startsWith("{")) continue;
      const id = (JSON.parse(line) as { id: string }).id;
      if (!acked.has(id)) out.push({ id, line });
    }
  }
  return out;
}

describe("shipping by explicit verdicts", () => {
  test("an ingress's 413 sets nothing aside: 300 of 300 stay spooled, counted and logged; raised, they all ship", async () => {
    const px = proxy();
    try {
      await px.waitReady();
      const ids: string[] = [];
      for (let i = 0; i < 300; i++) ids.push((await px.decide("crm.read", s.users.alice!.remote)).record_id);
      // smaller batches down to one record, then retries with backoff, logged once
      await waitFor(() => px.logs().includes("audit shipping failed for the whole batch"), "shipping to meet the 413 down to single records", 30_000);
      // 300 → 150 → … → 1, then again (waited for, not slept on: a loaded machine is slower)
      await waitFor(async () => ((await metric(px, 'svc_proxy_audit_ship_failures_total{status="413"}')) ?? 0) >= 9, "nine 413s, down to a single record", 30_000);
      expect((await px.policy()).spool_depth).toBe(300);
      expect(existsSync(join(dirs.spool, "rejected.jsonl"))).toBe(false);
      expect(await metric(px, "svc_proxy_audit_shipping_failing")).toBe(1);
      expect(await metric(px, "svc_proxy_audit_records_set_aside_total")).toBe(0);
      expect(px.logs().match(/audit shipping failed for the whole batch/g)).toHaveLength(1);
      expect(px.logs()).toContain('"status":"413"');

      auditLimit = Number.MAX_SAFE_INTEGER; // the ingress's limit raised
      await waitFor(async () => (await px.policy()).spool_depth === 0, "the spool to empty", 60_000);
      const stored = new Set((await auditRecordsOf(api, s.installationId)).map((r) => r.id));
      expect(ids.filter((id) => !stored.has(id))).toEqual([]);
      expect(await metric(px, "svc_proxy_audit_shipping_failing")).toBe(0);
    } finally {
      await px.stop();
    }
  });

  test("svc proxy spool replay sends records set aside earlier (as 156695b did on that 413) once the cause is fixed", async () => {
    auditLimit = 0;
    dirs = proxyDirs();
    used.push(dirs);
    let px = proxy();
    await px.waitReady();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push((await px.decide("crm.read", s.users.bob!.remote)).record_id);
    await px.stop();
    // What 156695b's shipper left after the 413: the records in rejected.jsonl, the segments gone.
    const left = unacknowledged();
    expect(left.map((r) => r.id).sort()).toEqual([...ids].sort());
    const at = JSON.stringify(new Date().toISOString());
    writeFileSync(join(dirs.spool, "rejected.jsonl"), left.map((r) => `{"rejected_at":${at},"reason":"POST /api/v1/runtime/audit-records answered 413","record":${r.line}}\n`).join(""), {
      mode: 0o600,
    });
    for (const f of readdirSync(dirs.spool).filter((n) => /^seg-/.test(n))) rmSync(join(dirs.spool, f));

    auditLimit = Number.MAX_SAFE_INTEGER; // the cause fixed
    px = proxy();
    try {
      await px.waitReady();
      expect((await px.policy()).spool_depth).toBe(0);
      const replay = Bun.spawnSync([...svcCommand(), "proxy", "spool", "replay"], {
        env: { ...process.env, SVC_RUNTIME_TOKEN: s.runtimeToken, SVC_RUNTIME_SOCKET_PATH: dirs.socket },
        stdout: "pipe",
        stderr: "pipe",
      });
      expect({ code: replay.exitCode, stderr: replay.stderr.toString() }).toEqual({ code: 0, stderr: "" });
      expect(replay.stdout.toString()).toBe("replayed: 20 record(s) back into the spool; the proxy ships them now\n");
      await waitFor(
        async () => {
          const stored = new Set((await auditRecordsOf(api, s.installationId)).map((r) => r.id));
          return ids.every((id) => stored.has(id));
        },
        "the replayed records at the control plane",
        30_000,
      );
      expect(existsSync(join(dirs.spool, "rejected.jsonl"))).toBe(false);
      // nothing left to replay
      const again = Bun.spawnSync([...svcCommand(), "proxy", "spool", "replay", "--json"], {
        env: { ...process.env, SVC_RUNTIME_TOKEN: s.runtimeToken, SVC_RUNTIME_SOCKET_PATH: dirs.socket },
        stdout: "pipe",
      });
      expect(JSON.parse(again.stdout.toString())).toEqual({ replayed: 0, kept: 0 });
    } finally {
      await px.stop();
    }
  });
});
