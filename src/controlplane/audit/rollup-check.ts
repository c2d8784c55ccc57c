// Whether the per-hour roll-ups (rollups.ts) still equal the records they stand for. Budgets and
// `svc usage` read the roll-ups, and the store chains do not cover them: someone with write
// access to the database could lower a count in audit_hourly_usage (or mark counted rows
// pending) and widen every budget while every record still verifies. The control plane's own
// verification (audit-chain/verify-store.ts) therefore checks them against the records, hour by
// hour, as the fill migration counts them: tool and model calls made for a person (no task) for
// audit_hourly_calls, model calls' outcome records for audit_hourly_usage, pending rows left out.
//
// Bounded memory and time per step: one hour at a time, its records summed by the database
// (the id range of the hour, which bounds.ts guarantees, and the partial index of model
// outcomes), its roll-up rows read by their key, all in one transaction, so an ingest or a
// retention run committing meanwhile is seen in both or in neither; a turn of the event loop
// between hours. Hours are whole hours of the records' `ts`, every hour either side holds.
import { and, asc, count, eq, gt, gte, isNull, lt, sql, sum } from "drizzle-orm";
import { idFloor } from "../../contract/ids.ts";
import { type Db, nextTurn, tables } from "../db/index.ts";
import { ID_TIME_SLACK_MS, idBounds } from "./bounds.ts";
import { HOUR } from "./rollups.ts";

export type RollupFigures = { calls: number; prompt_tokens?: number; completion_tokens?: number; cost?: number };
/** One key of one hour whose roll-up differs from its records' sums. */
export type RollupMismatch = {
  kind: "rollup_mismatch";
  table: "audit_hourly_calls" | "audit_hourly_usage";
  org_id: string;
  hour: string;
  key: Record<string, string>;
  rollup: RollupFigures;
  records: RollupFigures;
  detail: string;
};
export type RollupCheck = { hours: number; mismatches: number; first: RollupMismatch[] };

/** Mismatches kept with their detail; the rest are only counted. */
const KEPT = 20;

type Sums = Map<string, { key: Record<string, string>; figures: RollupFigures }>;
/** One hour as the records give it and as the roll-ups hold it. */
export type HourSums = { calls: Sums; usage: Sums };

const CALLS_KEY = ["kind", "decision", "tool_name", "user_id"] as const;
const USAGE_KEY = ["user_id", "model", "agent_id", "replica_id"] as const;

/** Adds one group to `into` under its key ('' for null, as the roll-ups key it). */
function addGroup(into: Sums, names: readonly string[], values: readonly (string | null)[], figures: RollupFigures): void {
  const key = Object.fromEntries(names.map((n, i) => [n, values[i] ?? ""]));
  const k = names.map((n) => key[n]).join("\u0000");
  const held = into.get(k);
  if (!held) {
    into.set(k, { key, figures: { ...figures } });
    return;
  }
  for (const f of Object.keys(figures) as (keyof RollupFigures)[]) held.figures[f] = (held.figures[f] ?? 0) + (figures[f] ?? 0);
}

/** Sums of floating-point costs added in another order differ in their last bits, never more. */
const same = (x: number, y: number) => Math.abs(x - y) <= 1e-9 * Math.max(1, Math.abs(x), Math.abs(y));

function figuresText(f: RollupFigures): string {
  const parts = [`${f.calls} calls`];
  if (f.prompt_tokens !== undefined) parts.push(`${f.prompt_tokens} prompt tokens`, `${f.completion_tokens} completion tokens`, `cost ${f.cost}`);
  return parts.join(", ");
}

/** The keys of one hour where the roll-ups and the records differ (a key absent on one side is zero there). Pure. */
export function compareHour(orgId: string, hour: number, records: HourSums, rollups: HourSums): RollupMismatch[] {
  const out: RollupMismatch[] = [];
  for (const table of ["audit_hourly_calls", "audit_hourly_usage"] as const) {
    const side = table === "audit_hourly_calls" ? "calls" : "usage";
    const zero: RollupFigures = side === "calls" ? { calls: 0 } : { calls: 0, prompt_tokens: 0, completion_tokens: 0, cost: 0 };
    for (const k of new Set([...records[side].keys(), ...rollups[side].keys()])) {
      const r = records[side].get(k);
      const u = rollups[side].get(k);
      const want = r?.figures ?? zero;
      const held = u?.figures ?? zero;
      if ((Object.keys(zero) as (keyof RollupFigures)[]).every((f) => same(want[f] ?? 0, held[f] ?? 0))) continue;
      const key = (r ?? u)!.key;
      const at = new Date(hour).toISOString();
      const named = Object.entries(key)
        .map(([n, v]) => `${n} ${v === "" ? "(none)" : v}`)
        .join(", ");
      out.push({
        kind: "rollup_mismatch",
        table,
        org_id: orgId,
        hour: at,
        key,
        rollup: held,
        records: want,
        detail: `roll-up ${table} of organization ${orgId} for the hour from ${at} (${named}) holds ${figuresText(held)}; its records give ${figuresText(want)}`,
      });
    }
  }
  return out;
}

/** The hour's counted records, summed by the database, and its roll-up rows; in the caller's transaction. */
async function readHour(tx: Db, orgId: string, hour: number): Promise<{ records: HourSums; rollups: HourSums }> {
  const { auditRecords: a, auditHourlyCalls: hc, auditHourlyUsage: hu } = tables(tx);
  const ids = idBounds(hour, hour + HOUR - 1);
  const inHour = [gte(a.ts, hour), lt(a.ts, hour + HOUR), sql`${a.rollupPending} IS NOT TRUE`];
  // kind as literals: the (org, kind, id) index, read over the hour's id range (bounds.ts).
  const calls = await tx
    .select({ kind: a.kind, decision: a.decision, toolName: a.toolName, userId: a.userId, calls: count() })
    .from(a)
    .where(and(eq(a.orgId, orgId), sql`${a.kind} IN ('tool', 'model')`, gte(a.id, ids.min!), lt(a.id, ids.below!), isNull(a.task), ...inHour))
    .groupBy(a.kind, a.decision, a.toolName, a.userId);
  // kind and action as literals: the partial index audit_org_model_outcome_ts (usage.ts).
  const usage = await tx
    .select({
      userId: a.userId,
      model: a.model,
      agentId: a.agentId,
      replicaId: a.replicaId,
      calls: count(),
      prompt: sum(a.promptTokens).mapWith(Number),
      completion: sum(a.completionTokens).mapWith(Number),
      cost: sum(a.cost).mapWith(Number),
    })
    .from(a)
    .where(and(eq(a.orgId, orgId), sql`${a.kind} = 'outcome'`, sql`${a.action} = 'model:invoke'`, ...inHour))
    .groupBy(a.userId, a.model, a.agentId, a.replicaId);
  const records: HourSums = { calls: new Map(), usage: new Map() };
  for (const r of calls) addGroup(records.calls, CALLS_KEY, [r.kind, r.decision, r.toolName, r.userId], { calls: Number(r.calls) });
  for (const r of usage)
    addGroup(records.usage, USAGE_KEY, [r.userId, r.model, r.agentId, r.replicaId], { calls: Number(r.calls), prompt_tokens: r.prompt ?? 0, completion_tokens: r.completion ?? 0, cost: r.cost ?? 0 });
  const rollups: HourSums = { calls: new Map(), usage: new Map() };
  for (const r of await tx
    .select()
    .from(hc)
    .where(and(eq(hc.orgId, orgId), eq(hc.hour, hour))))
    addGroup(rollups.calls, CALLS_KEY, [r.kind, r.decision, r.toolName, r.userId], { calls: r.calls });
  for (const r of await tx
    .select()
    .from(hu)
    .where(and(eq(hu.orgId, orgId), eq(hu.hour, hour))))
    addGroup(rollups.usage, USAGE_KEY, [r.userId, r.model, r.agentId, r.replicaId], { calls: r.calls, prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, cost: r.cost });
  return { records, rollups };
}

/**
 * The next hour after `after` (null: the first) that a roll-up row or a record may fall in: the
 * roll-ups' next hours by their key, the records' by the first id that can be dated after it.
 * Every hour holding either is reached; an empty one costs a step at most.
 */
async function nextHour(db: Db, orgId: string, after: number | null): Promise<number | null> {
  const { auditRecords: a, auditHourlyCalls: hc, auditHourlyUsage: hu } = tables(db);
  const candidates: number[] = [];
  for (const t of [hc, hu]) {
    const [row] = await db
      .select({ hour: t.hour })
      .from(t)
      .where(and(eq(t.orgId, orgId), after === null ? undefined : gt(t.hour, after)))
      .orderBy(asc(t.orgId), asc(t.hour))
      .limit(1);
    if (row) candidates.push(Number(row.hour));
  }
  const from = after === null ? null : idFloor("auditRecord", after + HOUR - ID_TIME_SLACK_MS);
  const [rec] = await db
    .select({ ts: a.ts })
    .from(a)
    .where(and(eq(a.orgId, orgId), from === null ? undefined : gte(a.id, from)))
    .orderBy(asc(a.orgId), asc(a.id))
    .limit(1);
  if (rec) candidates.push(Math.max(Math.floor(Number(rec.ts) / HOUR) * HOUR, after === null ? -Infinity : after + HOUR));
  return candidates.length === 0 ? null : Math.min(...candidates);
}

/** Checks every hour of the organization's roll-ups against its records (see the top of this file). */
export async function checkRollups(db: Db, orgId: string): Promise<RollupCheck> {
  const result: RollupCheck = { hours: 0, mismatches: 0, first: [] };
  for (let hour = await nextHour(db, orgId, null); hour !== null; hour = await nextHour(db, orgId, hour)) {
    const h = hour;
    const found = await db.transaction(async (tx) => {
      const { records, rollups } = await readHour(tx, orgId, h);
      return compareHour(orgId, h, records, rollups);
    });
    result.hours++;
    result.mismatches += found.length;
    for (const m of found) if (result.first.length < KEPT) result.first.push(m);
    await nextTurn();
  }
  return result;
}
