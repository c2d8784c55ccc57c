// Per-hour roll-ups of the audit (issue 30; tables.ts auditHourlyCalls, auditHourlyUsage): the
// console's activity, `svc usage` and budgets read these instead of summing millions of records.
// They change only with the records: ingest adds the new records' counts in the transaction
// that stores them (a duplicate is not new: never counted twice; a late record counts in its own
// hour), and retention takes the deleted records' counts away in the transaction that deletes
// them. The migration that made the tables filled them from the records already stored.
import { and, eq, inArray, lte, sql } from "drizzle-orm";
import type { Db } from "../db/index.ts";
import { tables } from "../db/index.ts";

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

/** What a set of records adds to the roll-ups (`sign` -1: what deleting them takes away). Pure. */
export function rollupDeltas(rows: readonly RollupSource[], sign: 1 | -1 = 1): { calls: CallsRow[]; usage: UsageRow[] } {
  const calls = new Map<string, CallsRow>();
  const usage = new Map<string, UsageRow>();
  for (const r of rows) {
    const hour = hourOf(r.ts);
    if ((r.kind === "tool" || r.kind === "model") && r.task === null) {
      const row: CallsRow = { orgId: r.orgId, hour, kind: r.kind, decision: r.decision, toolName: r.toolName ?? "", userId: r.userId ?? "", calls: 0 };
      const key = JSON.stringify([row.orgId, hour, row.kind, row.decision, row.toolName, row.userId]);
      const held = calls.get(key) ?? row;
      held.calls += sign;
      calls.set(key, held);
    }
    if (r.kind === "outcome" && r.action === "model:invoke") {
      const row: UsageRow = { orgId: r.orgId, hour, userId: r.userId ?? "", model: r.model ?? "", agentId: r.agentId, replicaId: r.replicaId ?? "", calls: 0, promptTokens: 0, completionTokens: 0, cost: 0 };
      const key = JSON.stringify([row.orgId, hour, row.userId, row.model, row.agentId, row.replicaId]);
      const held = usage.get(key) ?? row;
      held.calls += sign;
      held.promptTokens += sign * (r.promptTokens ?? 0);
      held.completionTokens += sign * (r.completionTokens ?? 0);
      held.cost += sign * (r.cost ?? 0);
      usage.set(key, held);
    }
  }
  return { calls: [...calls.values()], usage: [...usage.values()] };
}

/** Rows per statement: well under either store's limit of bound parameters. */
const CHUNK = 500;

/**
 * Adds the records' counts (`sign` -1: takes them away) inside the caller's transaction, which
 * must be the one that stores (or deletes) the records. Hours left at zero are removed.
 */
export async function applyToRollups(tx: Db, rows: readonly RollupSource[], sign: 1 | -1 = 1): Promise<void> {
  if (rows.length === 0) return;
  const { auditHourlyCalls: hc, auditHourlyUsage: hu } = tables(tx);
  const deltas = rollupDeltas(rows, sign);
  for (let k = 0; k < deltas.calls.length; k += CHUNK) {
    await tx
      .insert(hc)
      .values(deltas.calls.slice(k, k + CHUNK))
      .onConflictDoUpdate({ target: [hc.orgId, hc.hour, hc.kind, hc.decision, hc.toolName, hc.userId], set: { calls: sql`${hc.calls} + excluded.calls` } });
  }
  for (let k = 0; k < deltas.usage.length; k += CHUNK) {
    await tx
      .insert(hu)
      .values(deltas.usage.slice(k, k + CHUNK))
      .onConflictDoUpdate({
        target: [hu.orgId, hu.hour, hu.userId, hu.model, hu.agentId, hu.replicaId],
        set: {
          calls: sql`${hu.calls} + excluded.calls`,
          promptTokens: sql`${hu.promptTokens} + excluded.prompt_tokens`,
          completionTokens: sql`${hu.completionTokens} + excluded.completion_tokens`,
          cost: sql`${hu.cost} + excluded.cost`,
        },
      });
  }
  if (sign > 0) return;
  const byOrg = new Map<string, Set<number>>();
  for (const r of [...deltas.calls, ...deltas.usage]) byOrg.set(r.orgId, (byOrg.get(r.orgId) ?? new Set()).add(r.hour));
  for (const [orgId, hours] of byOrg) {
    await tx.delete(hc).where(and(eq(hc.orgId, orgId), inArray(hc.hour, [...hours]), lte(hc.calls, 0)));
    await tx.delete(hu).where(and(eq(hu.orgId, orgId), inArray(hu.hour, [...hours]), lte(hu.calls, 0)));
  }
}
