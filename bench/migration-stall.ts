// The write stall of a schema migration on PostgreSQL (issue 29): `bun bench/migration-stall.ts
// [--rows 1000000]` with SVC_TEST_POSTGRES_URL (or the test server: scripts/postgres-test-server.sh).
// A database migrated by this release gets N audit records (generate_series, cached between runs
// in a database named by N). Then the same migration, an ALTER TABLE audit_records ADD COLUMN and
// two CREATE INDEX on it, runs twice while a writer inserts 100-record batches into
// audit_records back to back (what ingest does):
//   - "one transaction": as drizzle's migrator ran every migration before 0.2.0;
//   - "svc 0.2.0": postgres-migrate.ts (a short transaction with a lock timeout, the indexes
//     built CONCURRENTLY after it).
// It prints the longest and the 99th-percentile batch during each, and the migration's own time,
// and writes bench/results/migration-stall-<time>.json. The target: a stall under 1 s per 1M rows.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { SQL } from "bun";
import { embeddedMigrations } from "../src/controlplane/db/embedded-migrations.ts";
import { openStore } from "../src/controlplane/db/index.ts";
import { MIGRATIONS } from "../src/controlplane/db/migrations-pg/index.ts";
import { migratePostgres, planMigration } from "../src/controlplane/db/postgres-migrate.ts";
import { metric, table } from "./lib/report.ts";
import { summarize } from "./lib/stats.ts";

const { values } = parseArgs({ options: { rows: { type: "string", default: "1000000" }, migration: { type: "string", default: "column" } } });
const N = Number(values.rows);
const server = process.env.SVC_TEST_POSTGRES_URL ?? Bun.spawnSync(["bash", "scripts/postgres-test-server.sh"]).stdout.toString().trim();
const urlOf = (name: string) => Object.assign(new URL(server), { pathname: `/${name}` }).toString();

/** A migrated database holding N audit records, made once and copied for each run. */
async function template(): Promise<string> {
  const name = `svc_bench_stall_${N}`;
  const admin = new SQL({ url: server, max: 1 });
  const [have] = await admin`SELECT 1 FROM pg_database WHERE datname = ${name}`;
  if (!have) {
    await admin.unsafe(`CREATE DATABASE "${name}_build"`);
    const store = openStore(urlOf(`${name}_build`), { maxConnections: 1 });
    await store.migrate();
    await store.close();
    const sql = new SQL({ url: urlOf(`${name}_build`), max: 1 });
    await sql.unsafe(`INSERT INTO audit_records (id, org_id, workspace_id, installation_id, agent_id, ts, kind, harness, action, tool_name, decision, reason, policy_revision, via_installation, recipient_key_ids, received_at)
      SELECT 'rec_' || lpad(g::text, 26, '0'), 'org_BENCH', 'ws_BENCH', 'inst_BENCH', 'agt_BENCH', 1700000000000 + g, 'tool', 'chatui', 'tool:crm.t' || (g % 20), 'crm.t' || (g % 20), CASE WHEN g % 10 = 0 THEN 'deny' ELSE 'permit' END, 'policy', 1, false, '[]'::jsonb, 1700000000000 + g
      FROM generate_series(1, ${N}) g`);
    await sql.unsafe("VACUUM ANALYZE audit_records");
    await sql.close();
    await admin.unsafe(`ALTER DATABASE "${name}_build" RENAME TO "${name}"`);
  }
  const copy = `svc_bench_stall_run_${Math.random().toString(36).slice(2, 8)}`;
  await admin.unsafe(`CREATE DATABASE "${copy}" TEMPLATE "${name}"`);
  await admin.close();
  return copy;
}

const MIGRATION = [
  'ALTER TABLE "audit_records" ADD COLUMN "bench_x" text;',
  'CREATE INDEX "audit_bench_x" ON "audit_records" USING btree ("org_id","bench_x","id");',
  'CREATE INDEX "audit_bench_kind" ON "audit_records" USING btree ("org_id","kind","id");',
];
// `--migration collation` (issue 30): tool names in byte order for the tool index, as the first
// build of the filter-index migration did it (the column's collation changed, its indexes
// rebuilt under an exclusive lock) against audit_tool_bytewise (an index on
// (tool_name COLLATE "C") built CONCURRENTLY), both through svc's migrator.
const COLLATION_BEFORE = ['ALTER TABLE "audit_records" ALTER COLUMN "tool_name" SET DATA TYPE text COLLATE "C";'];
const COLLATION_AFTER = MIGRATIONS.find((m) => m.tag.endsWith("_audit_tool_bytewise"))!.sql.split("--> statement-breakpoint");
// Both from the store as 0.1.30 left it: the tool index on the column, under the database's collation.
const TOOL_INDEX_AS_BEFORE = ['DROP INDEX "audit_org_tool_decision_id"', 'CREATE INDEX "audit_org_tool_decision_id" ON "audit_records" USING btree ("org_id","tool_name","decision","id")'];
const COMPARED: Record<string, { statements: readonly string[]; svc: boolean; target: boolean; setup?: readonly string[] }> =
  values.migration === "collation"
    ? {
        "column collation (first build)": { statements: COLLATION_BEFORE, svc: true, target: false, setup: TOOL_INDEX_AS_BEFORE },
        "expression index (audit_tool_bytewise)": { statements: COLLATION_AFTER, svc: true, target: true, setup: TOOL_INDEX_AS_BEFORE },
      }
    : { "one transaction": { statements: MIGRATION, svc: false, target: false }, "svc 0.2.0": { statements: MIGRATION, svc: true, target: true } };

/** Writes 100-record batches back to back until `stop`; returns each batch's milliseconds. */
async function writer(url: string, stop: { done: boolean }): Promise<number[]> {
  const sql = new SQL({ url, max: 1 });
  const times: number[] = [];
  let k = 0;
  while (!stop.done) {
    const t0 = performance.now();
    await sql.unsafe(`INSERT INTO audit_records (id, org_id, workspace_id, installation_id, agent_id, ts, kind, harness, action, tool_name, decision, reason, policy_revision, via_installation, recipient_key_ids, received_at)
      SELECT 'rec_W' || lpad((${k} + g)::text, 25, '0'), 'org_BENCH', 'ws_BENCH', 'inst_BENCH', 'agt_BENCH', 1800000000000 + g, 'tool', 'chatui', 'tool:x', 'x', 'permit', 'policy', 1, false, '[]'::jsonb, 1800000000000 + g FROM generate_series(1, 100) g`);
    times.push(performance.now() - t0);
    k += 100;
  }
  await sql.close();
  return times;
}

async function run(kind: string): Promise<{ stallMs: number; p99Ms: number; migrationMs: number; batches: number }> {
  const { statements, svc, setup } = COMPARED[kind]!;
  const db = await template();
  const url = urlOf(db);
  if (setup) {
    const prep = new SQL({ url, max: 1 });
    for (const s of setup) await prep.unsafe(s);
    await prep.close();
  }
  const stop = { done: false };
  const writing = writer(url, stop);
  await Bun.sleep(1000); // the writer's baseline
  const t0 = performance.now();
  const sql = new SQL({ url, max: 1 });
  if (!svc) {
    await sql.begin(async (tx) => {
      for (const s of statements) await tx.unsafe(s);
    });
  } else {
    const conn = await sql.reserve();
    const when = Date.now() + 365 * 24 * 3600_000;
    // this release's migrations (all applied already) and the bench's, applied as svc applies a new one
    const plan = planMigration(statements);
    if (statements === MIGRATION && plan.filter((p) => p.kind === "index").length !== 2) throw new Error("the plan should build both indexes concurrently");
    await migratePostgres(conn, [...embeddedMigrations(MIGRATIONS), { tag: "9999_bench", folderMillis: when, hash: "bench", sql: [...statements], bps: true }]);
    void conn.release();
  }
  const migrationMs = performance.now() - t0;
  await Bun.sleep(1000);
  stop.done = true;
  const times = await writing;
  await sql.close();
  const admin = new SQL({ url: server, max: 1 });
  await admin.unsafe(`DROP DATABASE "${db}" WITH (FORCE)`);
  await admin.close();
  const s = summarize(times);
  return { stallMs: s.max, p99Ms: s.p99, migrationMs, batches: s.n };
}

const results: Record<string, Awaited<ReturnType<typeof run>>> = {};
for (const kind of Object.keys(COMPARED)) results[kind] = await run(kind);
const perMillion = (ms: number) => (ms * 1_000_000) / N;
const metrics = Object.entries(results).flatMap(([kind, r]) => [
  metric(
    "migration-stall",
    `${kind}: longest write batch`,
    "ms",
    [r.stallMs],
    COMPARED[kind]!.target ? { op: "<=", value: 1000 * (N / 1_000_000) } : undefined,
    `${N.toLocaleString("en-US")} rows; ${fmtPer(perMillion(r.stallMs))} per 1M`,
  ),
  metric("migration-stall", `${kind}: p99 write batch`, "ms", [r.p99Ms]),
  metric("migration-stall", `${kind}: migration time`, "ms", [r.migrationMs], undefined, `${r.batches} batches written meanwhile`),
]);
function fmtPer(ms: number): string {
  return `${Math.round(ms)} ms`;
}
console.log(table(metrics));
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
const file = join(import.meta.dir, "results", `migration-stall-${values.migration}-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(file, JSON.stringify({ rows: N, machine: { cores: navigator.hardwareConcurrency }, results, metrics }, null, 2));
console.log(`wrote ${file}`);
