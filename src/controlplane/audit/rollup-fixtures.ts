// For the roll-ups' tests (rollups.test.ts, rollup-check*.test.ts, audit-chain/verify-schedule.test.ts):
// records over many hours of nine days, of every kind the roll-ups count or leave out; and the
// red team's edit, a roll-up lowered by SQL (no record touched, so the chains still verify).
import { and, asc, eq, type SQL, sql } from "drizzle-orm";
import type { AuditRecord } from "../../contract/audit.ts";
import type { AuditChain } from "../../proxy/audit/chain.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import { type addInstallation, auditRecord } from "../runtime/fixtures.ts";

const DAY = 86_400_000;
const HOUR = 3_600_000;

/** Records over nine days in many hours: decisions, background tasks, model outcomes with usage; stamped in a shuffled time order. */
export function makeRecords(inst: Awaited<ReturnType<typeof addInstallation>>, chain: AuditChain, now: number, n: number, from = 0): AuditRecord[] {
  return Array.from({ length: n }, (_, j) => {
    const i = from + j;
    const ts = new Date(now - (8 - ((i * 37) % 9)) * DAY - ((i * 7) % 24) * HOUR - ((i * 13) % 60) * 60_000).toISOString();
    const user = [`usr_a`, `usr_b`, null][i % 3]!;
    const subject = { user_id: user, remote_user_id: "fe", via_installation: user === null };
    const decision = i % 5 === 0 ? ("deny" as const) : ("permit" as const);
    const kinds = [
      { kind: "tool" as const, action: "tool:mail.send", tool_name: ["mail.send", "mail.read", "crm.lookup"][i % 3]! },
      { kind: "model" as const, action: "model:invoke", tool_name: null, model: "gpt" },
      { kind: "outcome" as const, action: "model:invoke", tool_name: null, model: ["gpt", "claude"][i % 2]!, outcome: "ok" as const, prompt_tokens: 10 + i, completion_tokens: i % 4, cost: 0.001 * i },
      { kind: "model" as const, action: "model:invoke", tool_name: null, model: "gpt", task: "title_generation" },
    ];
    return chain.stamp(auditRecord(inst, { ts, subject, decision, ...kinds[i % 4]! }));
  });
}

type UsageRow = Tables["auditHourlyUsage"]["$inferSelect"];
type CallsRow = Tables["auditHourlyCalls"]["$inferSelect"];

/**
 * One row of `userId`'s usage roll-up (the earliest hour, or `hour`) lowered by SQL, as someone
 * with write access to the database would do to widen a budget. Returns the row as it was.
 */
export async function lowerUsage(db: Db, orgId: string, userId: string, by: { calls?: number; promptTokens?: number }, hour?: number): Promise<UsageRow> {
  const hu = tables(db).auditHourlyUsage;
  const [row] = await db
    .select()
    .from(hu)
    .where(and(eq(hu.orgId, orgId), eq(hu.userId, userId), ...(hour === undefined ? [] : [eq(hu.hour, hour)])))
    .orderBy(asc(hu.hour))
    .limit(1);
  if (!row) throw new Error(`lowerUsage: no usage roll-up of ${userId} in ${orgId}`);
  const set: { calls?: SQL; promptTokens?: SQL } = {};
  if (by.calls) set.calls = sql`${hu.calls} - ${by.calls}`;
  if (by.promptTokens) set.promptTokens = sql`${hu.promptTokens} - ${by.promptTokens}`;
  // the row by its whole key (audit_hourly_usage_key): one roll-up row changed, never its neighbours
  await db
    .update(hu)
    .set(set)
    .where(and(eq(hu.orgId, row.orgId), eq(hu.hour, row.hour), eq(hu.userId, row.userId), eq(hu.model, row.model), eq(hu.agentId, row.agentId), eq(hu.replicaId, row.replicaId)));
  return row;
}

/** A decision count of the roll-ups (`row`, as read from audit_hourly_calls) lowered by one, by SQL. */
export async function lowerCalls(db: Db, row: CallsRow): Promise<void> {
  const hc = tables(db).auditHourlyCalls;
  await db
    .update(hc)
    .set({ calls: sql`${hc.calls} - 1` })
    .where(and(eq(hc.orgId, row.orgId), eq(hc.hour, row.hour), eq(hc.kind, row.kind), eq(hc.decision, row.decision), eq(hc.toolName, row.toolName), eq(hc.userId, row.userId)));
}
