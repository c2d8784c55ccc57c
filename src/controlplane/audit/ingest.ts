// Audit ingest (POST /api/v1/runtime/audit-records): a batch from one installation's shipper
// is stored in one transaction, 500 rows per INSERT. Insert-or-ignore by record id
// makes a batch resent after a crash harmless; every id stored, new or not, is acknowledged.
// A record that is not the caller's (another installation or organization, or an id already
// held by another installation's record) is not stored and is named in `rejected` with the
// reason; the rest of the batch is stored all the same, so one bad record never blocks a
// shipper. Resending gives the same answer. Ciphertext is stored as bytes and never looked into.
import { and, eq, inArray } from "drizzle-orm";
import type { AuditRecord } from "../../contract/audit.ts";
import type { AuditBatchResponse } from "../../contract/runtime-api.ts";
import { tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";

/** Rows per INSERT: 27 parameters each stays under SQLite's and PostgreSQL's parameter limits. */
const CHUNK = 500;

/** Why a record is not the caller's to store; null when it is (it names the caller's installation and organization). */
export function ownershipProblem(r: AuditRecord, caller: Pick<RuntimeCaller, "installationId" | "orgId">): string | null {
  if (r.installation_id === caller.installationId && r.organization_id === caller.orgId) return null;
  return `record ${r.id} belongs to installation ${r.installation_id} of organization ${r.organization_id}, not to the calling installation ${caller.installationId}`;
}

/** One record as a row of audit_records. */
export function recordRow(r: AuditRecord, receivedAt: number) {
  return {
    id: r.id,
    orgId: r.organization_id,
    workspaceId: r.workspace_id,
    installationId: r.installation_id,
    agentId: r.agent_id,
    replicaId: r.replica_id ?? null,
    ts: Date.parse(r.ts),
    kind: r.kind,
    harness: r.harness,
    action: r.action,
    toolName: r.tool_name,
    model: r.model ?? null,
    decision: r.decision,
    reason: r.reason,
    policyId: r.policy_id ?? null,
    policyRevision: r.policy_revision,
    userId: r.subject.user_id,
    remoteUserId: r.subject.remote_user_id,
    viaInstallation: r.subject.via_installation,
    ref: r.ref ?? null,
    outcome: r.outcome ?? null,
    exitCode: r.exit_code ?? null,
    argsDigest: r.args_digest,
    digestKeyId: r.digest_key_id,
    recipientKeyIds: r.recipient_key_ids,
    ciphertext: r.ciphertext === null ? null : Buffer.from(r.ciphertext, "base64"),
    receivedAt,
  };
}

export async function ingestBatch(deps: ControlPlaneDeps, caller: RuntimeCaller, records: readonly AuditRecord[]): Promise<AuditBatchResponse> {
  const receivedAt = deps.now();
  const rejected: { id: string; reason: string }[] = [];
  const own: AuditRecord[] = [];
  for (const r of records) {
    const problem = ownershipProblem(r, caller);
    if (problem) rejected.push({ id: r.id, reason: problem });
    else own.push(r);
  }
  return deps.db.transaction(async (tx) => {
    const a = tables(tx).auditRecords;
    const stored = new Set<string>();
    for (let k = 0; k < own.length; k += CHUNK) {
      const rows = own.slice(k, k + CHUNK).map((r) => recordRow(r, receivedAt));
      const inserted = await tx.insert(a).values(rows).onConflictDoNothing({ target: a.id }).returning({ id: a.id });
      for (const row of inserted) stored.add(row.id);
    }
    // Ids not stored now were already held: acknowledged only when the stored record is the caller's own.
    const held = new Map<string, { orgId: string; installationId: string }>();
    const already = [...new Set(own.filter((r) => !stored.has(r.id)).map((r) => r.id))];
    for (let k = 0; k < already.length; k += CHUNK) {
      const rows = await tx.select({ id: a.id, orgId: a.orgId, installationId: a.installationId }).from(a).where(inArray(a.id, already.slice(k, k + CHUNK)));
      for (const row of rows) held.set(row.id, row);
    }
    const acknowledged: string[] = [];
    let inserted = 0;
    for (const r of own) {
      if (stored.delete(r.id)) {
        // New: counted once, even when the batch carries the id twice.
        inserted++;
        acknowledged.push(r.id);
        // An outcome completes its decision record, once: when the outcome is new.
        if (r.kind === "outcome" && r.ref) {
          await tx.update(a).set({ outcome: r.outcome ?? null, exitCode: r.exit_code ?? null }).where(and(eq(a.id, r.ref), eq(a.orgId, caller.orgId), eq(a.installationId, caller.installationId)));
        }
        continue;
      }
      const h = held.get(r.id);
      if (h && (h.installationId !== caller.installationId || h.orgId !== caller.orgId)) {
        rejected.push({ id: r.id, reason: `record id ${r.id} is already used by another installation's record` });
        continue;
      }
      acknowledged.push(r.id);
    }
    return { acknowledged, inserted, duplicates: acknowledged.length - inserted, rejected };
  });
}
