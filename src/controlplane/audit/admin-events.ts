// Events the control plane writes into the audit trail itself (kind "admin"): escrow recovery
// requests, approvals and decryptions (issue 15). They sit beside the runtimes' records, so
// `svc audit list --kind admin`, export and the SIEM see them, and they form the organization's
// own hash chain ("controlplane"), signed by the checkpoints like a proxy's: deleting or editing
// one is caught by `svc audit verify`. An event carries who acted and why, never plaintext.
import type { AuditRecord } from "../../contract/audit.ts";
import { ciphertextDigest, recordHash } from "../../contract/audit-chain.ts";
import { newId } from "../../contract/ids.ts";
import { appendOwnChain } from "../audit-chain/service.ts";
import { type Db, tables } from "../db/index.ts";
import { recordRow } from "./ingest.ts";

/** The chain, installation and agent ids admin events carry: no runtime ever has them. */
export const CONTROL_PLANE_SOURCE = "controlplane";

export type AdminEvent = {
  orgId: string;
  /** The workspace the event concerns (the recovered record's). */
  workspaceId: string;
  /** e.g. `audit:recovery.request` */
  action: string;
  decision: "permit" | "deny";
  /** What happened, in words (who, which request); never secret material. */
  reason: string;
  /** The account that acted (acc_…). */
  actorAccountId: string;
  /** The audit record the event is about. */
  ref: string | null;
};

/** Appends one admin event in the caller's transaction; returns its record id. */
export async function appendAdminEvent(tx: Db, e: AdminEvent, now: number): Promise<string> {
  const id = newId("auditRecord", now);
  const base = {
    id,
    ts: new Date(now).toISOString(),
    kind: "admin",
    harness: CONTROL_PLANE_SOURCE,
    organization_id: e.orgId,
    workspace_id: e.workspaceId,
    installation_id: CONTROL_PLANE_SOURCE,
    agent_id: CONTROL_PLANE_SOURCE,
    action: e.action,
    tool_name: null,
    decision: e.decision,
    reason: e.reason,
    policy_id: null,
    policy_revision: 0,
    subject: { user_id: null, remote_user_id: e.actorAccountId, via_installation: false },
    ...(e.ref ? { ref: e.ref } : {}),
    args_digest: null,
    digest_key_id: null,
    recipient_key_ids: [],
    ciphertext: null,
  } as unknown as AuditRecord;
  const link = await appendOwnChain(tx, e.orgId, CONTROL_PLANE_SOURCE, CONTROL_PLANE_SOURCE, now, (l) => recordHash({ ...base, ...l }, ciphertextDigest(null)));
  await tx.insert(tables(tx).auditRecords).values(recordRow({ ...base, ...link } as AuditRecord, now));
  return id;
}
