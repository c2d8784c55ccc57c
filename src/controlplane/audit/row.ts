// A runtime's audit record as a row of audit_records: pure, shared by ingest and the admin
// trail (which writes its events as rows of the same table).
import { type AuditRecord, upstreamIdentityText } from "../../contract/audit.ts";

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
    toolServer: r.tool_server ?? null,
    upstreamIdentity: upstreamIdentityText(r.upstream_identity),
    model: r.model ?? null,
    task: r.task ?? null,
    decision: r.decision,
    reason: r.reason,
    policyId: r.policy_id ?? null,
    policyRevision: r.policy_revision,
    shadowDecision: r.shadow?.decision ?? null,
    shadowPolicyId: r.shadow?.policy_id ?? null,
    shadowReason: r.shadow?.reason ?? null,
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
    promptTokens: r.prompt_tokens ?? null,
    completionTokens: r.completion_tokens ?? null,
    cost: r.cost ?? null,
    durationMs: r.duration_ms ?? null,
    chainId: r.chain_id ?? null,
    chainSeq: r.chain_seq ?? null,
    chainPrev: r.chain_prev ?? null,
    receivedAt,
    // Set by the writer inside its transaction (a store chain's link, contract/store-chain.ts).
    storeChain: null as string | null,
    storeSeq: null as number | null,
    storePrev: null as string | null,
    // Counted in the roll-ups by the transaction that stores it (named, so PostgreSQL's
    // default for older replicas' rows, true, never applies: tables.ts).
    rollupPending: false,
  };
}
