// What the OCSF and ECS formats (ocsf.ts, ecs.ts) are built from: a record as the sinks stream
// it and as the export writes it, and the facts both formats read from it the same way. Pure.
import type { AdminResult, AdminSeverity } from "../../contract/admin-event.ts";
import type { AuditRecordView } from "./query.ts";

/** A record with its ciphertext's digest; `ciphertext` only for a sink created with include_ciphertext. */
export type SiemRecord = AuditRecordView & { ciphertext_sha256: string | null; ciphertext?: string };

/** The formats beside svc's own JSON: the sinks' `format` and the export's `format`. */
export const SIEM_FORMATS = ["svc", "ocsf", "ecs"] as const;
export type SiemFormat = (typeof SIEM_FORMATS)[number];

/** The product both formats name as the source of the events. */
export const PRODUCT = { name: "svc", vendor: "svc" } as const;

/** The record as JSON: what the existing formats carry as their body, kept whole in OCSF `raw_data` and ECS `event.original`. */
export const original = (r: SiemRecord) => JSON.stringify(r);

/** A record's severity on one scale (OCSF severity_id's): admin events their own, a deny Medium, an ask Low, the rest Informational. */
export function severityLevel(r: SiemRecord): 1 | 2 | 3 | 4 {
  if (r.admin) return ADMIN_SEVERITY_LEVEL[r.admin.severity];
  return r.decision === "deny" ? 3 : r.decision === "ask" ? 2 : 1;
}
const ADMIN_SEVERITY_LEVEL: Record<AdminSeverity, 1 | 2 | 4> = { info: 1, notice: 2, high: 4 };

/** Whether the event's thing happened: an admin change done or refused, an outcome ok or not, a decision's call let through or not. */
export function succeeded(r: SiemRecord): boolean | null {
  if (r.admin) return r.admin.result === ("ok" satisfies AdminResult);
  if (r.kind === "outcome") return r.outcome === null ? null : r.outcome === "ok";
  return r.decision === "deny" ? false : r.decision === "permit" ? true : null;
}

/** A system actor (`system:…`) or nobody (`anonymous`): not a person. */
export const isPerson = (actorId: string) => actorId.startsWith("acc_");

/** Epoch milliseconds of an ISO time. */
export const ms = (iso: string) => Date.parse(iso);

/** The object without its null and undefined members (formats leave out what a record does not have). */
export function compact<T extends Record<string, unknown>>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)) as Partial<T>;
}

/**
 * svc's own fields no OCSF or ECS field holds: the digests, the chains, the workspace and agent,
 * the usage and the shadow decision. Never the tool arguments (records hold only their keyed
 * digest) and never the ciphertext (only its digest here; the ciphertext itself travels only in
 * the raw record of a sink created with include_ciphertext, as in svc's own format).
 */
export function svcFields(r: SiemRecord) {
  return compact({
    kind: r.kind,
    harness: r.harness,
    workspace_id: r.workspace_id,
    agent_id: r.agent_id,
    installation_id: r.installation_id,
    replica_id: r.replica_id,
    tool_server: r.tool_server,
    task: r.task,
    ref: r.ref,
    args_digest: r.args_digest,
    digest_key_id: r.digest_key_id,
    ciphertext_sha256: r.ciphertext_sha256,
    encryption: r.encryption.mode === "recipients" ? `recipients:${r.encryption.key_ids.join(",")}` : r.encryption.mode,
    chain_id: r.chain_id,
    chain_seq: r.chain_seq,
    store_chain: r.store?.chain,
    store_seq: r.store?.seq,
    shadow_decision: r.shadow?.decision,
    shadow_policy_id: r.shadow?.policy_id,
    cost: r.cost,
    exit_code: r.exit_code,
    // Issue 32: the identity an MCP call presented upstream (never the token).
    upstream_identity_kind: r.upstream_identity?.kind,
    upstream_identity_subject: r.upstream_identity?.subject,
    upstream_identity_jti: r.upstream_identity?.kind === "assertion" ? r.upstream_identity.jti : undefined,
  });
}
