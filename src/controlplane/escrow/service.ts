// Escrow recovery (break-glass, issue 15). The service holds one escrow identity per
// organization, wrapped by the KMS (identity.ts); records written while escrow
// was on are encrypted to it as well as to the customer keys. Using it takes two people:
//   1. an owner requests the decryption of ONE record, giving a reason (pending);
//   2. another person approves (approved): an owner or admin whom the requester never granted
//      a membership or role, of long enough standing, freshly signed in (approval.ts, issue 27);
//   3. the requester alone fetches the plaintext, once (consumed): the control plane unwraps
//      the identity through the KMS, decrypts the record's arguments in memory and answers
//      with them; it never logs or stores the plaintext.
// Each step is an audit event (kind "admin", severity high, audit/admin-events.ts) and a notice
// to the other owners and admins (notices/), written in the same transaction as the state
// change, so no step happens without its event.
import type { RecoveryRequest } from "../../contract/admin-api.ts";
import { Decrypter } from "age-encryption";
import { and, desc, eq } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { actorOf, recordAdminEvent } from "../audit/admin-events.ts";
import { getRecord, recordCiphertext } from "../audit/query.ts";
import { type Principal, emailsOfAccounts } from "../auth/service.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { postNotice } from "../notices/service.ts";
import { escrowIdentity, escrowKeySummary } from "./identity.ts";

export type RecoveryRequestRow = Tables["auditRecoveryRequests"]["$inferSelect"];

export const REASON_MAX = 1000;

export const RECOVERY_ACTIONS = { request: "audit:recovery.request", approve: "audit:recovery.approve", decrypt: "audit:recovery.decrypt" } as const;

export type RecoveryRequestView = RecoveryRequest;

function view(r: RecoveryRequestRow, emails: Map<string, string>): RecoveryRequestView {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    id: r.id,
    record_id: r.recordId,
    reason: r.reason,
    status: r.status,
    requested_by: { account_id: r.requestedBy, email: emails.get(r.requestedBy) ?? null },
    approved_by: r.approvedBy ? { account_id: r.approvedBy, email: emails.get(r.approvedBy) ?? null } : null,
    created_at: new Date(r.createdAt).toISOString(),
    approved_at: iso(r.approvedAt),
    consumed_at: iso(r.consumedAt),
  };
}

async function views(db: Db, rows: RecoveryRequestRow[]): Promise<RecoveryRequestView[]> {
  const emails = await emailsOfAccounts(
    db,
    rows.flatMap((r) => (r.approvedBy ? [r.requestedBy, r.approvedBy] : [r.requestedBy])),
  );
  return rows.map((r) => view(r, emails));
}

export async function requestRow(db: Db, orgId: string, id: string): Promise<RecoveryRequestRow> {
  const q = tables(db).auditRecoveryRequests;
  const [row] = await db
    .select()
    .from(q)
    .where(and(eq(q.orgId, orgId), eq(q.id, id)));
  if (!row) throw new SvcError("not_found", `recovery request ${id} not found`);
  return row;
}

/**
 * Why the record cannot be recovered with the escrow identity, or null when it can: it must
 * be encrypted (not digest-only) and name the escrow key among its recipients.
 */
export function escrowProblem(recordId: string, encryption: { mode: "recipients"; key_ids: string[] } | { mode: "digest-only" }, escrowKeyId: string | null): string | null {
  if (encryption.mode === "digest-only") return `audit record ${recordId} is digest-only: its arguments were never stored, so there is nothing to recover`;
  if (!escrowKeyId)
    return `audit record ${recordId} is not encrypted to the escrow key: escrow was never enabled for this organization (its recipients: ${encryption.key_ids.join(", ")}); decrypt it with a customer key (\`svc audit decrypt\`)`;
  if (!encryption.key_ids.includes(escrowKeyId)) {
    return `audit record ${recordId} is not encrypted to the escrow key ${escrowKeyId} (its recipients: ${encryption.key_ids.join(", ")}): escrow was off or no customer key was active when it was written; decrypt it with a customer key (\`svc audit decrypt\`)`;
  }
  return null;
}

async function recoverableRecord(db: Db, orgId: string, recordId: string) {
  const record = await getRecord(db, orgId, recordId);
  const escrow = await escrowKeySummary(db, orgId);
  const problem = escrowProblem(recordId, record.encryption, escrow?.id ?? null);
  if (problem) throw new SvcError("record_not_escrowed", problem);
  return record;
}

export async function listRequests(db: Db, orgId: string, opts: { status?: RecoveryRequestRow["status"] } = {}): Promise<RecoveryRequestView[]> {
  const q = tables(db).auditRecoveryRequests;
  const where = opts.status ? and(eq(q.orgId, orgId), eq(q.status, opts.status)) : eq(q.orgId, orgId);
  return views(db, await db.select().from(q).where(where).orderBy(desc(q.id)).limit(500));
}

export async function getRequest(db: Db, orgId: string, id: string): Promise<RecoveryRequestView> {
  return (await views(db, [await requestRow(db, orgId, id)]))[0]!;
}

/** Step 1: an owner asks to decrypt one record, with a reason. */
export async function createRequest(deps: ControlPlaneDeps, by: Principal, input: { recordId: string; reason: string }): Promise<RecoveryRequestView> {
  if (by.role !== "owner") throw new SvcError("forbidden", `only an owner can request an escrow recovery; role "${by.role}" can approve another owner's request`);
  const reason = input.reason.trim();
  if (!reason) throw new SvcError("validation_failed", "give a reason for the recovery (--reason): it is kept in the audit trail");
  if (reason.length > REASON_MAX) throw new SvcError("validation_failed", `the reason is ${reason.length} characters; at most ${REASON_MAX}`);
  const record = await recoverableRecord(deps.db, by.orgId, input.recordId);
  const now = deps.now();
  const id = newId("recoveryRequest", now);
  await deps.db.transaction(async (tx) => {
    await tx.insert(tables(tx).auditRecoveryRequests).values({ id, orgId: by.orgId, recordId: record.id, reason, requestedBy: by.accountId, status: "pending", createdAt: now });
    const text = `${by.email} requested escrow recovery ${id} of record ${record.id}: ${reason}`;
    const eventId = await recordAdminEvent(
      tx,
      {
        orgId: by.orgId,
        workspaceId: record.workspace_id,
        action: RECOVERY_ACTIONS.request,
        actor: actorOf(by),
        target: { type: "recovery_request", id },
        severity: "high",
        reason: text,
        ref: record.id,
      },
      now,
    );
    await postNotice(tx, { orgId: by.orgId, action: RECOVERY_ACTIONS.request, result: "ok", actorAccountId: by.accountId, text, ref: id, eventId }, now);
  });
  return getRequest(deps.db, by.orgId, id);
}

/**
 * Step 3: the requester's one fetch. The plaintext is computed before the transaction (KMS and
 * age work stay outside it) and returned only when the transaction turned the request from
 * approved to consumed, so of two concurrent fetches one gets it and the other 410.
 */
export async function fetchPlaintext(deps: ControlPlaneDeps, by: Principal, id: string): Promise<{ recordId: string; plaintext: Uint8Array }> {
  const row = await requestRow(deps.db, by.orgId, id);
  if (row.requestedBy !== by.accountId) throw new SvcError("forbidden", `only the requester of ${id} can fetch its plaintext`);
  if (row.status === "consumed")
    throw new SvcError(
      "recovery_consumed",
      `the plaintext of ${id} was already fetched at ${new Date(row.consumedAt ?? 0).toISOString()}; it is handed out once: request a new recovery if you need it again`,
    );
  if (row.status !== "approved")
    throw new SvcError(
      "recovery_not_approved",
      `recovery request ${id} is not approved yet: another person, an owner or admin you never granted a membership or role, must approve it (\`svc audit recover approve ${id}\`)`,
    );
  const record = await recoverableRecord(deps.db, by.orgId, row.recordId);
  const ciphertext = await recordCiphertext(deps.db, by.orgId, row.recordId);
  const identity = await escrowIdentity(deps, by.orgId);
  if (!identity) throw new SvcError("record_not_escrowed", `organization ${by.orgId} holds no escrow identity`);
  const d = new Decrypter();
  d.addIdentity(identity);
  let plaintext: Uint8Array;
  try {
    plaintext = await d.decrypt(ciphertext);
  } catch (e) {
    // The record names the escrow key but its ciphertext does not open with it: a changed row.
    throw new SvcError("record_not_escrowed", `audit record ${row.recordId} names the escrow key but does not decrypt with it (${(e as Error).message}); check it with \`svc audit verify\``);
  }
  const now = deps.now();
  await deps.db.transaction(async (tx) => {
    const q = tables(tx).auditRecoveryRequests;
    const [done] = await tx
      .update(q)
      .set({ status: "consumed", consumedAt: now })
      .where(and(eq(q.orgId, by.orgId), eq(q.id, id), eq(q.status, "approved"), eq(q.requestedBy, by.accountId)))
      .returning({ id: q.id });
    if (!done) throw new SvcError("recovery_consumed", `the plaintext of ${id} was already fetched; it is handed out once: request a new recovery if you need it again`);
    const text = `escrow recovery ${id}: the arguments of record ${row.recordId} were decrypted and handed to ${by.email}, once`;
    const eventId = await recordAdminEvent(
      tx,
      {
        orgId: by.orgId,
        workspaceId: record.workspace_id,
        action: RECOVERY_ACTIONS.decrypt,
        actor: actorOf(by),
        target: { type: "recovery_request", id },
        severity: "high",
        reason: text,
        ref: row.recordId,
      },
      now,
    );
    await postNotice(tx, { orgId: by.orgId, action: RECOVERY_ACTIONS.decrypt, result: "ok", actorAccountId: by.accountId, text, ref: id, eventId }, now);
  });
  return { recordId: row.recordId, plaintext };
}
