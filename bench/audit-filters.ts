// Issue 30 §3: every filter of `svc audit list` and the console's audit page, the console home's
// activity and `svc usage --since 90d`, over a store of generated records (1,000,000 by default),
// on SQLite or PostgreSQL. Records are written straight into the store with ingest's own row
// mapping and its roll-ups (audit/rollups.ts), in the same transactions; the queries are the
// services' own (no HTTP), timed as p50 of repeated runs: the first page and the 50th page
// (reached by following the cursor) of each filter.
//
//   bun bench/audit-filters.ts [--records 1000000] [--store <sqlite file>|postgres://…|pg]
//
// Without --store, a SQLite file in a temporary directory (removed at the end). The figures
// belong in docs/performance.md beside the targets: ≤ 50 ms p50 per filter, console home ≤ 200 ms.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AuditRecord } from "../src/contract/audit.ts";
import { newId } from "../src/contract/ids.ts";
import { auditActivity } from "../src/controlplane/audit/activity.ts";
import { exportText } from "../src/controlplane/audit/export.ts";
import { recordRow } from "../src/controlplane/audit/ingest.ts";
import { type AuditFilters, searchRecords } from "../src/controlplane/audit/query.ts";
import { applyToRollups } from "../src/controlplane/audit/rollups.ts";
import { usageBy } from "../src/controlplane/audit/usage.ts";
import { type Db, openMigrated, tables } from "../src/controlplane/db/index.ts";
import { startBenchPostgres } from "./lib/postgres.ts";

const DAY = 86_400_000;
const arg = (name: string) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const total = Number(arg("records") ?? 1_000_000);
// --store pg: a PostgreSQL server of the bench's own (bench/lib/postgres.ts), durable as in production
const pg = arg("store") === "pg" ? await startBenchPostgres() : null;
if (pg && "skipped" in pg) throw new Error(pg.skipped);
const tmp = arg("store") ? null : mkdtempSync(join(tmpdir(), "svc-bench-audit-"));
const location = pg ? pg.url : (arg("store") ?? join(tmp!, "controlplane.db"));
const ORG = "org_BENCH";
const USERS = 200;
const TOOLS = ["mail.send", "mail.read", "mail.search", ...Array.from({ length: 17 }, (_, i) => `crm.tool${i}`)];

/** One generated record: a realistic mix of kinds, decisions, background tasks, shadow decisions and usage. */
function record(k: number, ts: number): AuditRecord {
  const kindRoll = k % 100;
  const kind = kindRoll < 45 ? "tool" : kindRoll < 65 ? "model" : "outcome";
  const model = kind === "model" || (kind === "outcome" && k % 2 === 0);
  const tool = TOOLS[(k * 7) % TOOLS.length]!;
  const decision = k % 20 === 3 || k % 100 === 31 ? "deny" : k % 100 === 7 ? "ask" : "permit";
  return {
    id: newId("auditRecord", ts),
    ts: new Date(ts).toISOString(),
    kind,
    harness: "chatui",
    organization_id: ORG,
    workspace_id: "ws_BENCH",
    installation_id: `inst_${k % 4}`,
    agent_id: "agt_BENCH",
    replica_id: `rep_${k % 3}`,
    action: model ? "model:invoke" : `tool:${tool}`,
    tool_name: model ? null : tool,
    model: model ? ["gpt", "claude"][k % 2]! : null,
    ...(kind === "model" && k % 10 === 1 ? { task: "title_generation" } : {}),
    decision,
    reason: "policy",
    policy_id: `pol_${k % 12}`,
    policy_revision: 1,
    ...(k % 100 === 11 ? { shadow: { decision: "deny" as const, policy_id: "pol_SHADOW", reason: "shadow" } } : {}),
    subject: { user_id: `usr_${k % USERS}`, remote_user_id: "fe", via_installation: false },
    args_digest: `hmac-sha256:${(k % 5000).toString(16).padStart(64, "0")}`,
    digest_key_id: "dk_BENCH",
    recipient_key_ids: [],
    ciphertext: null,
    ...(kind === "outcome" ? { outcome: "ok", ref: newId("auditRecord", ts), ...(model ? { prompt_tokens: 100 + (k % 50), completion_tokens: k % 30, cost: 0.0001 * (k % 7) } : {}) } : {}),
  };
}

async function generate(db: Db, now: number): Promise<number> {
  const a = tables(db).auditRecords;
  const t0 = performance.now();
  const span = 90 * DAY;
  const perTx = 20_000;
  for (let done = 0; done < total; done += perTx) {
    await db.transaction(async (tx) => {
      for (let i = done; i < Math.min(total, done + perTx); i += 500) {
        const rows = [];
        for (let k = i; k < Math.min(total, i + 500, done + perTx); k++) rows.push(recordRow(record(k, now - span + Math.floor((k * span) / total)), now));
        await tx.insert(tables(tx).auditRecords).values(rows);
        await applyToRollups(tx, rows);
      }
    });
  }
  // a few admin events among them (the admin trail's own index)
  const admin = Array.from({ length: 50 }, (_, i) => ({
    ...recordRow(record(i, now - i * DAY), now),
    id: newId("auditRecord", now - i * DAY),
    kind: "admin" as const,
    action: "policy.update",
    actorId: "acc_BENCH",
  }));
  await db.insert(a).values(admin);
  return performance.now() - t0;
}

async function p50(n: number, body: () => Promise<unknown>): Promise<number> {
  const xs: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await body();
    xs.push(performance.now() - t0);
  }
  return xs.sort((x, y) => x - y)[Math.floor(n / 2)]!;
}

async function main() {
  const store = await openMigrated(location);
  const db = store.db;
  const now = Date.now();
  const held = await db
    .select({ id: tables(db).auditRecords.id })
    .from(tables(db).auditRecords)
    .limit(1);
  if (held.length === 0) {
    const ms = await generate(db, now);
    console.log(`generated ${total} records with their roll-ups in ${(ms / 1000).toFixed(1)} s (${Math.round(total / (ms / 1000))} records/s)`);
  }
  if (store.dialect === "postgres") await db.execute((await import("drizzle-orm")).sql`ANALYZE audit_records`);
  const filters: Array<[string, Omit<AuditFilters, "cursor" | "limit">]> = [
    ["(none)", {}],
    ["--kind admin", { kind: "admin" }],
    ["--kind model", { kind: "model" }],
    ["--decision deny", { decision: "deny" }],
    ["--background only --decision deny", { background: "only", decision: "deny" }],
    ["--tool mail.", { tool: "mail." }],
    ["--tool crm.tool3 --decision deny", { tool: "crm.tool3", decision: "deny" }],
    ["--tool 'mail.*' --user … --since 24h", { tool: "mail.*", user: "usr_7", since: "24h" }],
    ["--user …", { user: "usr_7" }],
    ["--installation …", { installation: "inst_2" }],
    ["--policy …", { policy: "pol_SHADOW" }],
    ["--shadow changed", { shadow: "changed" }],
    ["--since 7d --until 6d", { since: "7d", until: "6d" }],
    ["--kind runtime --background hide", { kind: "runtime", background: "hide" }],
    ["view=calls (console audit page)", { view: "calls" }],
  ];
  const rows: string[] = [];
  for (const [label, f] of filters) {
    const first = await p50(7, async () => searchRecords(db, ORG, { ...f, limit: 50 }, now));
    let cursor: string | null = null;
    let pages = 0;
    for (; pages < 49; pages++) {
      const page = await searchRecords(db, ORG, { ...f, limit: 50, ...(cursor ? { cursor } : {}) }, now);
      if (!page.next_cursor) break;
      cursor = page.next_cursor;
    }
    const fiftieth = pages === 49 ? await p50(7, async () => searchRecords(db, ORG, { ...f, limit: 50, cursor: cursor! }, now)) : null;
    rows.push(`| ${label} | ${first.toFixed(1)} ms | ${fiftieth === null ? `(${pages + 1} pages)` : `${fiftieth.toFixed(1)} ms`} | ≤ 50 ms |`);
  }
  const exportFirst = await p50(5, async () => {
    const chunks = await exportText(db, ORG, { since: "30d" }, "jsonl", now);
    await chunks.next();
    await chunks.return(undefined);
  });
  rows.push(`| export --since 30d, first page | ${exportFirst.toFixed(1)} ms | | |`);
  const home = await p50(7, async () => auditActivity(db, ORG, now - DAY, now));
  rows.push(`| console home (activity, 24h) | ${home.toFixed(1)} ms | | ≤ 200 ms |`);
  const week = await p50(7, async () => auditActivity(db, ORG, now - 7 * DAY, now));
  rows.push(`| console activity, 7d | ${week.toFixed(1)} ms | | ≤ 200 ms |`);
  const usage = await p50(7, async () => usageBy(db, ORG, "user", { since: now - 90 * DAY - 1234 }));
  rows.push(`| svc usage --since 90d --by user | ${usage.toFixed(1)} ms | | |`);
  console.log(`\n${store.dialect}, ${total} records\n\n| query | first page | 50th page | target |\n|---|---|---|---|\n${rows.join("\n")}`);
  await store.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  if (pg && !("skipped" in pg)) await pg.stop();
}

await main();
