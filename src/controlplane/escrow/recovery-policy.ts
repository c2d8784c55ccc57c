// The organization's rule for escrow recovery approvers (issue 27): how long an approver must
// have been a member when the request was made (default 24 hours). Only an owner changes it;
// the change is an admin event (severity high) and a notice to the other owners and admins.
//
// Raising it holds at once, for every request not yet approved. Lowering it holds only for
// requests made once the age it replaces has passed since the change: an owner who lowers it to
// 0 to approve with an account made today waits exactly as long as that account would have had
// to age anyway, so lowering never makes a sockpuppet usable sooner (docs/audit.md).
import type { RecoveryPolicy } from "../../contract/admin-api.ts";
import { eq } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { actorOf, recordAdminEvent } from "../audit/admin-events.ts";
import { type Principal, emailsOfAccounts } from "../auth/service.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { postNotice } from "../notices/service.ts";
import { FRESH_SIGN_IN_MS } from "./approval-rules.ts";

export const DEFAULT_APPROVER_MIN_AGE_HOURS = 24;
/** A year: a longer wait is no rule anyone could meet. */
export const MAX_APPROVER_MIN_AGE_HOURS = 8760;
export const POLICY_ACTION = "audit:recovery.policy";
const HOUR_MS = 3_600_000;

type PolicyRow = Tables["auditRecoveryPolicies"]["$inferSelect"];
type Setting = Pick<PolicyRow, "approverMinAgeHours" | "previousMinAgeHours" | "changedAt">;

/** The minimum approver age (hours) for a request made at `at` (pure). */
export function minAgeHoursAt(s: Setting | undefined, at: number): number {
  if (!s) return DEFAULT_APPROVER_MIN_AGE_HOURS;
  if (s.approverMinAgeHours >= s.previousMinAgeHours) return s.approverMinAgeHours;
  return at < loweringEffectiveAt(s) ? s.previousMinAgeHours : s.approverMinAgeHours;
}

function loweringEffectiveAt(s: Setting): number {
  return s.changedAt + s.previousMinAgeHours * HOUR_MS;
}

async function policyRow(db: Db, orgId: string): Promise<PolicyRow | undefined> {
  const p = tables(db).auditRecoveryPolicies;
  const [row] = await db.select().from(p).where(eq(p.orgId, orgId));
  return row;
}

/** The minimum approver age (hours) for a request of the organization made at `at`. */
export async function approverMinAgeHours(db: Db, orgId: string, at: number): Promise<number> {
  return minAgeHoursAt(await policyRow(db, orgId), at);
}

export async function getPolicy(db: Db, orgId: string, now: number): Promise<RecoveryPolicy> {
  const row = await policyRow(db, orgId);
  const pending = row && row.approverMinAgeHours < row.previousMinAgeHours && now < loweringEffectiveAt(row);
  const by = row ? ((await emailsOfAccounts(db, [row.changedBy])).get(row.changedBy) ?? null) : null;
  return {
    approver_min_age_hours: row?.approverMinAgeHours ?? DEFAULT_APPROVER_MIN_AGE_HOURS,
    effective_min_age_hours: minAgeHoursAt(row, now),
    lowering_effective_at: pending ? new Date(loweringEffectiveAt(row)).toISOString() : null,
    fresh_sign_in_minutes: FRESH_SIGN_IN_MS / 60_000,
    changed_at: row ? new Date(row.changedAt).toISOString() : null,
    changed_by: row ? { account_id: row.changedBy, email: by } : null,
  };
}

/** An owner sets the minimum approver age; recorded and announced to the other owners and admins. */
export async function setPolicy(deps: ControlPlaneDeps, by: Principal, hours: number): Promise<RecoveryPolicy> {
  if (by.role !== "owner") throw new SvcError("forbidden", `only an owner can change the recovery approver rule; role "${by.role}" cannot`);
  if (!Number.isInteger(hours) || hours < 0 || hours > MAX_APPROVER_MIN_AGE_HOURS) {
    throw new SvcError("validation_failed", `approver_min_age_hours must be a whole number of hours from 0 to ${MAX_APPROVER_MIN_AGE_HOURS}`, {
      errors: [{ path: "/approver_min_age_hours", message: "out of range" }],
    });
  }
  const now = deps.now();
  await deps.db.transaction(async (tx) => {
    const before = await policyRow(tx, by.orgId);
    const inForce = minAgeHoursAt(before, now);
    const p = tables(tx).auditRecoveryPolicies;
    const values = { approverMinAgeHours: hours, previousMinAgeHours: inForce, changedAt: now, changedBy: by.accountId };
    await tx
      .insert(p)
      .values({ orgId: by.orgId, ...values })
      .onConflictDoUpdate({ target: p.orgId, set: values });
    const when = hours < inForce ? `; it holds for requests made from ${new Date(now + inForce * HOUR_MS).toISOString()} (the ${inForce} hours in force until then must pass first)` : "";
    const text = `${by.email} set the minimum membership age of escrow recovery approvers from ${inForce} to ${hours} hours${when}`;
    const eventId = await recordAdminEvent(
      tx,
      {
        orgId: by.orgId,
        action: POLICY_ACTION,
        actor: actorOf(by),
        target: { type: "recovery_policy", id: by.orgId },
        before: { approver_min_age_hours: before?.approverMinAgeHours ?? DEFAULT_APPROVER_MIN_AGE_HOURS, effective_min_age_hours: inForce },
        after: { approver_min_age_hours: hours, effective_min_age_hours: minAgeHoursAt(values, now) },
        severity: "high",
        reason: text,
      },
      now,
    );
    await postNotice(tx, { orgId: by.orgId, action: POLICY_ACTION, result: "ok", actorAccountId: by.accountId, text, eventId }, now);
  });
  return getPolicy(deps.db, by.orgId, now);
}
