// Per-hour roll-ups of the audit (issue 30; tables.ts auditHourlyCalls, auditHourlyUsage): the
// console's activity, `svc usage` and budgets read these instead of summing millions of records.
// They change only with the records: ingest adds the new records' counts in the transaction
// that stores them (a duplicate is not new: never counted twice; a late record counts in its own
// hour), and retention takes the deleted records' counts away in the transaction that deletes
// them. The migration that made the tables filled them from the records already stored.
import { and, eq, inArray, lte } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { type Dialect, type Statement, placeholders, rawStatements, tables } from "../db/index.ts";

export const HOUR = 3_600_000;

/** The fields of a stored record the roll-ups read. */
export type RollupSource = {
  orgId: string;
  ts: number;
  kind: string;
  action: string;
  task: string | null;
  decision: "permit" | "deny" | "ask";
  toolName: string | null;
  userId: string | null;
  model: string | null;
  agentId: string;
  replicaId: string | null;
  promptTokens: number | null;
  completionTokens: number | null;
  cost: number | null;
};

type CallsRow = { orgId: string; hour: number; kind: "tool" | "model"; decision: "permit" | "deny" | "ask"; toolName: string; userId: string; calls: number };
type UsageRow = { orgId: string; hour: number; userId: string; model: string; agentId: string; replicaId: string; calls: number; promptTokens: number; completionTokens: number; cost: number };

export const hourOf = (ts: number): number => Math.floor(ts / HOUR) * HOUR;

/** What a set of records adds to the roll-ups (`sign` -1: what deleting them takes away), one row per key. Pure. */
export function rollupDeltas(rows: readonly RollupSource[], sign: 1 | -1 = 1): { calls: CallsRow[]; usage: UsageRow[] } {
  const calls = new Map<string, CallsRow>();
  const usage = new Map<string, UsageRow>();
  // Keys joined with a character no id, name or model holds (a JSON text per record cost more
  // than the rest of the roll-ups' work, issue 30), and not built at all for a decision like the
  // one before it (a shipper's batch is one proxy's run of calls: mostly the same user and tool).
  let last = null as CallsRow | null;
  for (const r of rows) {
    const hour = hourOf(r.ts);
    if ((r.kind === "tool" || r.kind === "model") && r.task === null) {
      const toolName = r.toolName ?? "";
      const userId = r.userId ?? "";
      let held: CallsRow | null | undefined = last;
      if (!held || held.hour !== hour || held.kind !== r.kind || held.decision !== r.decision || held.toolName !== toolName || held.userId !== userId || held.orgId !== r.orgId) {
        const key = `${r.orgId}\u0000${hour}\u0000${r.kind}\u0000${r.decision}\u0000${toolName}\u0000${userId}`;
        held = calls.get(key);
        if (!held) calls.set(key, (held = { orgId: r.orgId, hour, kind: r.kind, decision: r.decision, toolName, userId, calls: 0 }));
        last = held;
      }
      held.calls += sign;
    }
    if (r.kind === "outcome" && r.action === "model:invoke") {
      const userId = r.userId ?? "";
      const model = r.model ?? "";
      const replicaId = r.replicaId ?? "";
      const key = `${r.orgId}\u0000${hour}\u0000${userId}\u0000${model}\u0000${r.agentId}\u0000${replicaId}`;
      let held = usage.get(key);
      if (!held) usage.set(key, (held = { orgId: r.orgId, hour, userId, model, agentId: r.agentId, replicaId, calls: 0, promptTokens: 0, completionTokens: 0, cost: 0 }));
      held.calls += sign;
      held.promptTokens += sign * (r.promptTokens ?? 0);
      held.completionTokens += sign * (r.completionTokens ?? 0);
      held.cost += sign * (r.cost ?? 0);
    }
  }
  return { calls: [...calls.values()], usage: [...usage.values()] };
}

/** Rows per statement: well under either store's limit of bound parameters. */
const CHUNK = 500;

/** A roll-up table as the hand-written upsert sees it: its key columns, then the sums added. */
type UpsertShape<R> = { table: string; keys: readonly (keyof R & string)[]; sums: readonly (keyof R & string)[]; column: (field: string) => string };
const snake = (f: string) => f.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const CALLS: UpsertShape<CallsRow> = { table: "audit_hourly_calls", keys: ["orgId", "hour", "kind", "decision", "toolName", "userId"], sums: ["calls"], column: snake };
const USAGE: UpsertShape<UsageRow> = {
  table: "audit_hourly_usage",
  keys: ["orgId", "hour", "userId", "model", "agentId", "replicaId"],
  sums: ["calls", "promptTokens", "completionTokens", "cost"],
  column: snake,
};
const upsertTexts = new Map<string, string>();

/**
 * `INSERT … VALUES … ON CONFLICT (key) DO UPDATE SET sum = sum + excluded.sum`, written by hand
 * once per dialect, table and row count (prepared once by the driver, as ingest's own insert:
 * ingest.ts): drizzle's builder cost more per batch than the upsert itself.
 */
function upsert<R extends Record<string, unknown>>(dialect: Dialect, shape: UpsertShape<R>, rows: readonly R[]): Statement {
  const fields = [...shape.keys, ...shape.sums];
  const textKey = `${dialect}:${shape.table}:${rows.length}`;
  let text = upsertTexts.get(textKey);
  if (!text) {
    const p = placeholders(dialect);
    const row = () => `(${fields.map(p).join(",")})`;
    const q = (f: string) => `"${shape.column(f)}"`;
    text = `INSERT INTO "${shape.table}" (${fields.map(q).join(",")}) VALUES ${rows.map(row).join(",")} ON CONFLICT (${shape.keys.map(q).join(",")}) DO UPDATE SET ${shape.sums.map((f) => `${q(f)} = "${shape.table}".${q(f)} + excluded.${q(f)}`).join(", ")}`;
    upsertTexts.set(textKey, text);
  }
  const params: unknown[] = [];
  for (const r of rows) for (const f of fields) params.push(r[f]);
  return { text, params };
}

/** The upserts that add the records' counts (`sign` -1: take them away), for the caller's transaction (ingest sends them with its other last statements). */
export function rollupStatements(dialect: Dialect, rows: readonly RollupSource[], sign: 1 | -1 = 1): Statement[] {
  return deltaStatements(dialect, rollupDeltas(rows, sign));
}

function deltaStatements(dialect: Dialect, deltas: ReturnType<typeof rollupDeltas>): Statement[] {
  const out: Statement[] = [];
  for (let k = 0; k < deltas.calls.length; k += CHUNK) out.push(upsert(dialect, CALLS, deltas.calls.slice(k, k + CHUNK)));
  for (let k = 0; k < deltas.usage.length; k += CHUNK) out.push(upsert(dialect, USAGE, deltas.usage.slice(k, k + CHUNK)));
  return out;
}

/**
 * Adds the records' counts (`sign` -1: takes them away) inside the caller's transaction, which
 * must be the one that stores (or deletes) the records. Hours left at zero are removed.
 */
export async function applyToRollups(tx: Db, rows: readonly RollupSource[], sign: 1 | -1 = 1): Promise<void> {
  if (rows.length === 0) return;
  const { auditHourlyCalls: hc, auditHourlyUsage: hu } = tables(tx);
  const raw = rawStatements(tx);
  const deltas = rollupDeltas(rows, sign);
  for (const st of deltaStatements(raw.dialect, deltas)) await raw.rows(st.text, st.params);
  if (sign > 0) return;
  const byOrg = new Map<string, Set<number>>();
  for (const r of [...deltas.calls, ...deltas.usage]) byOrg.set(r.orgId, (byOrg.get(r.orgId) ?? new Set()).add(r.hour));
  for (const [orgId, hours] of byOrg) {
    await tx.delete(hc).where(and(eq(hc.orgId, orgId), inArray(hc.hour, [...hours]), lte(hc.calls, 0)));
    await tx.delete(hu).where(and(eq(hu.orgId, orgId), inArray(hu.hour, [...hours]), lte(hu.calls, 0)));
  }
}
