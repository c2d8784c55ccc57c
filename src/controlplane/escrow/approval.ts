// Step 2 of an escrow recovery: another person approves (approval-rules.ts says who may). The
// facts are read and the rules applied in the transaction that approves, so a membership or
// policy changed meanwhile is seen. A refusal is itself recorded: an admin event with result
// "refused", the rule's code and severity high (delivered by the SIEM sinks), and a notice to
// the other owners and admins, committed before the 403 is answered.
import { SvcError } from "../../contract/errors.ts";
import { actorOf, recordAdminEvent, recordedRefusal } from "../audit/admin-events.ts";
import { getRecord } from "../audit/query.ts";
import { idpSubjectSince, sharedIdpSubject } from "../auth/idp-subjects.ts";
import { grantPath, grantsOf, memberSince } from "../auth/membership-grants.ts";
import { type Principal, emailsOfAccounts } from "../auth/service.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { postNotice } from "../notices/service.ts";
import { and, eq } from "drizzle-orm";
import { type ApprovalFacts, RULE_SUMMARY, approvalRefusal } from "./approval-rules.ts";
import { approverMinAgeHours } from "./recovery-policy.ts";
import { RECOVERY_ACTIONS, type RecoveryRequestRow, type RecoveryRequestView, getRequest, requestRow } from "./service.ts";

/** What the rules need to know about this approver and this request. */
export async function approvalFacts(tx: Db, by: Principal, row: RecoveryRequestRow, now: number): Promise<ApprovalFacts> {
  const path = by.accountId === row.requestedBy ? null : await grantPath(tx, by.accountId, row.requestedBy);
  const emails = await emailsOfAccounts(tx, [row.requestedBy, ...(path ?? []).flatMap((g) => [g.accountId, g.byAccountId!])]);
  const email = (id: string) => emails.get(id) ?? id;
  return {
    requestId: row.id,
    requestedAt: row.createdAt,
    requester: { accountId: row.requestedBy, email: email(row.requestedBy) },
    approver: { accountId: by.accountId, email: by.email, via: by.via, authenticatedAt: by.authenticatedAt ?? null },
    now,
    minAgeHours: await approverMinAgeHours(tx, by.orgId, row.createdAt),
    approverMemberSince: await memberSince(tx, by.accountId, by.orgId),
    grantPath: path && path.map((g) => ({ accountId: g.accountId, email: email(g.accountId), kind: g.kind, role: g.role, by: g.byAccountId!, byEmail: email(g.byAccountId!), at: g.at })),
    sharedIdpSubject: by.accountId === row.requestedBy ? null : await sharedIdpSubject(tx, by.accountId, row.requestedBy),
    approverIdp: by.idp ? { ...by.idp, since: await idpSubjectSince(tx, by.accountId, by.idp) } : null,
  };
}

/** Step 2: another person approves; every refusal is recorded and announced, then answered. */
export async function approveRequest(deps: ControlPlaneDeps, by: Principal, id: string): Promise<RecoveryRequestView> {
  const now = deps.now();
  const refusal = await deps.db.transaction(async (tx) => {
    const row = await requestRow(tx, by.orgId, id);
    const refused = approvalRefusal(await approvalFacts(tx, by, row, now));
    if (!refused && row.status !== "pending") throw new SvcError("conflict", `recovery request ${id} is already ${row.status}`);
    const record = await getRecord(tx, by.orgId, row.recordId);
    const base = {
      orgId: by.orgId,
      workspaceId: record.workspace_id,
      action: RECOVERY_ACTIONS.approve,
      actor: actorOf(by),
      target: { type: "recovery_request", id },
      severity: "high" as const,
      ref: row.recordId,
    };
    if (refused) {
      const text = `${by.email} was refused approving escrow recovery ${id} of record ${row.recordId}: ${RULE_SUMMARY[refused.code]} (${refused.code})`;
      const eventId = await recordAdminEvent(tx, { ...base, result: "refused", status: refused.status, code: refused.code, reason: `${text}. Told: ${refused.message}` }, now);
      await postNotice(tx, { orgId: by.orgId, action: RECOVERY_ACTIONS.approve, result: "refused", actorAccountId: by.accountId, text, ref: id, eventId }, now);
      return recordedRefusal(refused, eventId);
    }
    const q = tables(tx).auditRecoveryRequests;
    await tx
      .update(q)
      .set({ status: "approved", approvedBy: by.accountId, approvedAt: now })
      .where(and(eq(q.id, id), eq(q.status, "pending")));
    // A membership older than the grant records has no known grantor: allowed, and said so.
    const unknown = (await grantsOf(tx, by.accountId, by.orgId)).some((g) => g.kind === "unknown");
    const caveat = unknown ? `; who granted ${by.email}'s membership is not known (it predates the records of who grants memberships)` : "";
    const text = `${by.email} approved escrow recovery ${id} of record ${row.recordId}; its requester can now fetch the plaintext once${caveat}`;
    const eventId = await recordAdminEvent(tx, { ...base, after: { status: "approved", approver_provenance: unknown ? "unknown" : "recorded" }, reason: text }, now);
    await postNotice(tx, { orgId: by.orgId, action: RECOVERY_ACTIONS.approve, result: "ok", actorAccountId: by.accountId, text, ref: id, eventId }, now);
    return null;
  });
  if (refusal) throw refusal;
  return getRequest(deps.db, by.orgId, id);
}
