// An audit record as the admin API shows it (never its ciphertext): pure, shared by search,
// export and the admin trail without their queries.
import type { AdminEventDetail } from "../../contract/admin-event.ts";
import type { Tables } from "../db/index.ts";
import type { UpstreamIdentity } from "../../contract/audit.ts";

export type Row = Omit<Tables["auditRecords"]["$inferSelect"], "ciphertext" | "rollupPending">;

export type AuditRecordView = ReturnType<typeof recordView>;

export function recordView(r: Row, email: string | null) {
  return {
    id: r.id,
    ts: new Date(r.ts).toISOString(),
    received_at: new Date(r.receivedAt).toISOString(),
    kind: r.kind,
    harness: r.harness,
    organization_id: r.orgId,
    workspace_id: r.workspaceId,
    installation_id: r.installationId,
    agent_id: r.agentId,
    replica_id: r.replicaId,
    action: r.action,
    tool_name: r.toolName,
    ...(r.toolServer !== null ? { tool_server: r.toolServer } : {}),
    ...(r.upstreamIdentity ? { upstream_identity: JSON.parse(r.upstreamIdentity) as UpstreamIdentity } : {}),
    model: r.model,
    ...(r.task !== null ? { task: r.task } : {}),
    decision: r.decision,
    reason: r.reason,
    policy_id: r.policyId,
    policy_revision: r.policyRevision,
    ...(r.shadowDecision !== null ? { shadow: { decision: r.shadowDecision, policy_id: r.shadowPolicyId, reason: r.shadowReason ?? "" } } : {}),
    subject: { user_id: r.userId, email, remote_user_id: r.remoteUserId, via_installation: r.viaInstallation },
    ref: r.ref,
    outcome: r.outcome,
    exit_code: r.exitCode,
    args_digest: r.argsDigest,
    digest_key_id: r.digestKeyId,
    ...(r.promptTokens !== null ? { prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens } : {}),
    ...(r.cost !== null ? { cost: r.cost } : {}),
    ...(r.durationMs !== null ? { duration_ms: r.durationMs } : {}),
    ...(r.chainId !== null ? { chain_id: r.chainId, chain_seq: r.chainSeq, chain_prev: r.chainPrev } : {}),
    ...(r.actorId !== null ? { actor_id: r.actorId } : {}),
    ...(r.target !== null ? { target: r.target } : {}),
    ...(r.detail !== null ? adminDetail(r.detail) : {}),
    ...(r.storeChain !== null ? { store: { chain: r.storeChain, seq: r.storeSeq, prev: r.storePrev } } : {}),
    encryption: r.recipientKeyIds.length > 0 ? ({ mode: "recipients", key_ids: r.recipientKeyIds } as const) : ({ mode: "digest-only" } as const),
  };
}

/** An admin event's detail as the view shows it; text that is not JSON (a row changed in the store) is left out, never a failed page. */
function adminDetail(text: string): { admin?: AdminEventDetail } {
  try {
    return { admin: JSON.parse(text) as AdminEventDetail };
  } catch {
    return {};
  }
}
