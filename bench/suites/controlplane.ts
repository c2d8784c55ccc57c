// Issue 9 §4: the control plane on its store (SQLite; PostgreSQL with SVC_TEST_POSTGRES_URL). Audit ingest through POST /runtime/audit-records
// (batches of 500 fresh records, 4 in flight, the shipper's call); audit search by tool and
// decision over 1,000,000 records (generated straight into the database file with the
// ingest's own row mapping, then searched through the admin HTTP API); bundle polls answered
// 304 per second (If-None-Match with the current ETag, 64 connections; wrk, then Bun fetch).
import { count } from "drizzle-orm";
import type { AuditRecord } from "../../src/contract/audit.ts";
import { newId } from "../../src/contract/ids.ts";
import { recordRow } from "../../src/controlplane/audit/ingest.ts";
import { openStore, tables } from "../../src/controlplane/db/index.ts";
import type { Scenario } from "../../src/proxy/testing/integration.ts";
import type { ControlPlaneProcess } from "../../test/support/controlplane-process.ts";
import type { BenchContext, Suite } from "../lib/context.ts";
import { cpuSeconds, httpLoad, rssMb, rssPeak } from "../lib/procs.ts";
import { type Metric, metric } from "../lib/report.ts";
import { wrkPath, wrkPolls } from "../lib/wrk.ts";

const TOOLS = 20;

/** A control plane under measurement, the scenario set up on it, and the store it runs on. */
export type Target = { cp: ControlPlaneProcess; scenario: Scenario; store: "SQLite" | "PostgreSQL" };

export function template(t: Target): Omit<AuditRecord, "id" | "ts"> {
  const s = t.scenario;
  return {
    kind: "tool",
    harness: "chatui",
    organization_id: t.cp.orgId,
    workspace_id: s.workspace,
    installation_id: s.installationId,
    agent_id: s.agentId,
    replica_id: "rep_BENCH",
    action: "tool:crm.read",
    tool_name: "crm.read",
    decision: "permit",
    reason: "policy",
    policy_id: null,
    policy_revision: 1,
    subject: { user_id: s.users.alice!.id, remote_user_id: s.users.alice!.remote, via_installation: false },
    args_digest: `hmac-sha256:${"ab".repeat(32)}`,
    digest_key_id: "dk_BENCH",
    recipient_key_ids: [],
    ciphertext: null,
  };
}

/** Adds `total` rows to the audit table through the store (SQLite or PostgreSQL): 20 tools, 1 in 10 a deny, users alternating. */
async function generateRecords(ctx: BenchContext, total: number): Promise<{ ms: number; added: number; rows: number }> {
  const store = openStore(ctx.stack.cp.database);
  const a = tables(store.db).auditRecords;
  const t0 = performance.now();
  const base = template({ cp: ctx.stack.cp, scenario: ctx.stack.scenario, store: "SQLite" });
  const users = [ctx.stack.scenario.users.alice!, ctx.stack.scenario.users.bob!];
  const start = Date.now() - 30 * 86_400_000;
  const perTransaction = 50_000;
  const perInsert = 500;
  for (let done = 0; done < total; ) {
    const n = Math.min(perTransaction, total - done);
    await store.db.transaction(async (tx) => {
      const t = tables(tx).auditRecords;
      for (let i = 0; i < n; i += perInsert) {
        const rows = [];
        for (let j = i; j < Math.min(n, i + perInsert); j++) {
          const k = done + j;
          const tool = `tool${k % TOOLS}.run`;
          const u = users[k % 2]!;
          const r: AuditRecord = {
            ...base,
            id: newId("auditRecord"),
            ts: new Date(start + k).toISOString(),
            action: `tool:${tool}`,
            tool_name: tool,
            decision: k % 10 === 3 ? "deny" : "permit",
            reason: k % 10 === 3 ? "svc.denied" : "policy",
            subject: { user_id: u.id, remote_user_id: u.remote, via_installation: false },
          };
          rows.push(recordRow(r, start + k));
        }
        await tx.insert(t).values(rows);
      }
    });
    done += n;
  }
  const [row] = await store.db.select({ n: count() }).from(a);
  await store.close();
  return { ms: performance.now() - t0, added: total, rows: Number(row!.n) };
}

async function timeGet(url: string, token: string, n: number): Promise<{ p50: number; body: any }> {
  const xs: number[] = [];
  let body: any = null;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    body = await res.json();
    xs.push(performance.now() - t0);
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
  }
  xs.sort((a, b) => a - b);
  return { p50: xs[Math.floor(xs.length / 2)]!, body };
}

export const controlplane: Suite = {
  name: "controlplane",
  async run(ctx) {
    const { stack } = ctx;
    const cp = stack.cp;
    const target: Target = { cp, scenario: stack.scenario, store: cp.database.startsWith("postgres") ? "PostgreSQL" : "SQLite" };
    const out: Metric[] = [];

    out.push(...(await ingestMetrics(ctx, target)));

    // search over 1,000,000 records (100,000 with --quick)
    const total = ctx.quick ? 100_000 : 1_000_000;
    const gen = await generateRecords(ctx, total);
    ctx.say(`  generated ${gen.added} audit records in ${(gen.ms / 1000).toFixed(1)} s (${gen.rows} in the table)`);
    ctx.facts.audit_records_generated = { added: gen.added, ms: gen.ms, rows_in_table: gen.rows };
    const org = `${cp.url}/api/v1/organizations/${cp.orgId}/audit-records`;
    const search: number[] = [];
    const deep: number[] = [];
    const byUser: number[] = [];
    for (let i = 0; i < ctx.runs; i++) {
      const first = await timeGet(`${org}?tool=tool3.run&decision=deny&limit=50`, cp.token, 30);
      if (first.body.records.length !== 50) throw new Error(`search found ${first.body.records.length} records`);
      search.push(first.p50);
      deep.push((await timeGet(`${org}?tool=tool3.run&decision=deny&limit=50&cursor=${first.body.next_cursor}`, cp.token, 30)).p50);
      byUser.push((await timeGet(`${org}?user=${stack.scenario.users.bob!.id}&decision=deny&limit=50`, cp.token, 10)).p50);
    }
    const label = ctx.quick ? "100k" : "1M";
    out.push(metric("control plane", `audit search tool+decision, ${label} records`, "ms", search, { op: "<=", value: 50 }));
    out.push(metric("control plane", `audit search tool+decision, next page, ${label}`, "ms", deep, { op: "<=", value: 50 }));
    out.push(metric("control plane", `audit search user+decision, ${label} records`, "ms", byUser, undefined, "(org, user, id) index, decision filtered"));

    // export (issue 15): every record streamed as JSON lines; the control plane's RSS must not
    // grow with the number of records (it reads 1,000 rows per pull of the stream).
    const exportRate: number[] = [];
    const exportRss: number[] = [];
    for (let i = 0; i < ctx.runs; i++) {
      const rss0 = rssMb(cp.proc.pid);
      const peak = rssPeak(cp.proc.pid);
      const t0 = performance.now();
      const res = await fetch(`${org}/export?format=jsonl`, { headers: { authorization: `Bearer ${cp.token}` } });
      let lines = 0;
      const reader = res.body!.getReader();
      for (let r = await reader.read(); !r.done; r = await reader.read()) for (const b of r.value) if (b === 10) lines++;
      const seconds = (performance.now() - t0) / 1000;
      if (lines < total) throw new Error(`export gave ${lines} records, expected at least ${total}`);
      exportRate.push(lines / seconds);
      exportRss.push(peak.stop() - rss0);
    }
    ctx.say(`  export: ${exportRate.map((x) => x.toFixed(0)).join("/")} records/s, RSS growth ${exportRss.map((x) => x.toFixed(0)).join("/")} MB`);
    out.push(metric("control plane", `audit export JSONL, ${label} records`, "records/s", exportRate, undefined, "GET …/audit-records/export, read by one client as it streams"));
    out.push(
      metric(
        "control plane",
        `control-plane RSS growth during the ${label} export`,
        "MB",
        exportRss,
        undefined,
        "peak RSS during the export minus RSS before (includes garbage not yet collected; compare the 100k and 1M runs)",
      ),
    );

    out.push(...(await pollMetrics(ctx, target)));
    return out;
  },
};

/** Audit ingest through POST /runtime/audit-records: batches of 500 fresh records, 4 in flight (the shipper's call). */
export async function ingestMetrics(ctx: BenchContext, t: Target): Promise<Metric[]> {
  const { cp } = t;
  const token = t.scenario.runtimeToken;
  const out: Metric[] = [];
  const ingest: number[] = [];
  const ingestCpu: number[] = [];
  for (let i = 0; i < ctx.runs; i++) {
    const cpu0 = cpuSeconds(cp.proc.pid);
    const r = await httpLoad({
      url: `${cp.url}/api/v1/runtime/audit-records`,
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      mode: "audit-batch",
      template: template(t),
      batch: 500,
      expectStatus: 200,
      concurrency: 4,
      durationS: ctx.durationS,
      warmupS: 0.5,
    });
    if (r.errors > 0) throw new Error(`ingest: ${r.errors} errors (${r.firstError})`);
    ingest.push(r.itemsPerS);
    // warm-up included on both sides: CPU of the whole run / records of the whole run
    ingestCpu.push(((cpuSeconds(cp.proc.pid) - cpu0) / (r.itemsPerS * (ctx.durationS + 0.5))) * 1e6);
  }
  ctx.say(`  ingest (${t.store}): ${ingest.map((x) => x.toFixed(0)).join("/")} records/s`);
  out.push(metric("control plane", `audit ingest, batches of 500, ${t.store}`, "records/s", ingest, { op: ">=", value: t.store === "SQLite" ? 50_000 : 25_000 }));
  out.push(
    metric(
      "control plane",
      `control-plane CPU per ingested record, ${t.store}`,
      "µs",
      ingestCpu,
      undefined,
      "utime+stime of the control plane; 1e6 / this = records/s one core could store when commits do not wait",
    ),
  );

  return out;
}

/**
 * Bundle polls answered 304 (If-None-Match with the current ETag, 64 keep-alive connections).
 * The figure with the target is wrk's (bench/lib/wrk.ts: a C client, every answer checked to be
 * a 304); the same polls from the bench's Bun fetch client follow, for comparison with earlier
 * runs: that client spends about as much CPU per poll as the control plane, on the same cores.
 */
export async function pollMetrics(ctx: BenchContext, t: Target): Promise<Metric[]> {
  const { cp } = t;
  const token = t.scenario.runtimeToken;
  const out: Metric[] = [];
  const url = `${cp.url}/api/v1/runtime/policy-bundle?version=1`;
  const first = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
  const etag = first.headers.get("etag")!;
  await first.arrayBuffer();
  const headers = { authorization: `Bearer ${token}`, "if-none-match": etag };
  const wrk = { rate: [] as number[], server: [] as number[], client: [] as number[] };
  const bun = { rate: [] as number[], server: [] as number[], client: [] as number[] };
  const note = "utime+stime of the control plane (not the database server)";
  if (wrkPath()) {
    await wrkPolls({ url, headers, connections: 64, durationS: 1 }); // warm-up
    for (let i = 0; i < ctx.runs; i++) {
      const cpu0 = cpuSeconds(cp.proc.pid);
      const r = await wrkPolls({ url, headers, connections: 64, durationS: ctx.durationS });
      wrk.rate.push(r.rps);
      wrk.server.push(((cpuSeconds(cp.proc.pid) - cpu0) / r.requests) * 1e6);
      wrk.client.push((r.clientCpuS / r.requests) * 1e6);
    }
    ctx.say(`  304 polls (${t.store}, wrk client): ${wrk.rate.map((x) => x.toFixed(0)).join("/")} /s`);
    out.push(metric("control plane", `bundle polls answered 304, ${t.store}, wrk client`, "/s", wrk.rate, { op: ">=", value: 20_000 }, "wrk, 64 keep-alive connections, every answer a 304"));
    out.push(metric("control plane", `control-plane CPU per 304 poll, ${t.store}, wrk client`, "µs", wrk.server, undefined, note));
    out.push(metric("control plane", `wrk client CPU per 304 poll, ${t.store}`, "µs", wrk.client, undefined, "the load client, on the same cores"));
  } else {
    out.push(metric("control plane", `bundle polls answered 304, ${t.store}, wrk client`, "/s", [Number.NaN], { op: ">=", value: 20_000 }, "skipped: wrk is not installed (bench/setup-peers.sh)"));
  }
  for (let i = 0; i < ctx.runs; i++) {
    const cpu0 = cpuSeconds(cp.proc.pid);
    const r = await httpLoad({ url, method: "GET", headers, mode: "static", expectStatus: 304, concurrency: 64, durationS: ctx.durationS, warmupS: 0.5 });
    if (r.errors > 0) throw new Error(`304 polls (Bun fetch client): ${r.errors} errors (${r.firstError})`);
    // warm-up included on both sides: CPU of the whole run / polls of the whole run
    const all = r.rps * (ctx.durationS + 0.5);
    bun.rate.push(r.rps);
    bun.server.push(((cpuSeconds(cp.proc.pid) - cpu0) / all) * 1e6);
    bun.client.push((r.clientCpuS / all) * 1e6);
  }
  ctx.say(`  304 polls (${t.store}, Bun fetch client): ${bun.rate.map((x) => x.toFixed(0)).join("/")} /s`);
  out.push(metric("control plane", `bundle polls answered 304, ${t.store}, Bun fetch client`, "/s", bun.rate, undefined, "the bench's Bun fetch client, 64 in flight (the figure before wrk)"));
  out.push(metric("control plane", `control-plane CPU per 304 poll, ${t.store}, Bun fetch client`, "µs", bun.server, undefined, note));
  out.push(metric("control plane", `Bun fetch client CPU per 304 poll, ${t.store}`, "µs", bun.client, undefined, "the load client, on the same cores"));
  return out;
}
