// An audit record as the admin API shows it (never its ciphertext): pure, shared by search,
// export and the admin trail without their queries.
import type { AdminEventDetail } from "../../contract/admin-event.ts";
import type { Tables } from "../db/index.ts";
import type { UpstreamIdentity } from "../../contract/audit.ts";

export type Row = Omit<Tables["auditRecords"]["$inferSelect"], "ciphertext" | "rollupPending">;

export type AuditRecordView = ReturnType<typeof recordView>;

export function recordView(r: Row, email: string | null) {
  // Optional fields assigned in place, in the order they are shown: a spread of a small object
  // per field cost more than the rest of the view on an export of millions (issue 30).
  const v: View = {
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
  } as View;
  if (r.toolServer !== null) v.tool_server = r.toolServer;
  if (r.upstreamIdentity) v.upstream_identity = JSON.parse(r.upstreamIdentity) as UpstreamIdentity;
  v.model = r.model;
  if (r.task !== null) v.task = r.task;
  v.decision = r.decision;
  v.reason = r.reason;
  v.policy_id = r.policyId;
  v.policy_revision = r.policyRevision;
  if (r.shadowDecision !== null) v.shadow = { decision: r.shadowDecision, policy_id: r.shadowPolicyId, reason: r.shadowReason ?? "" };
  v.subject = { user_id: r.userId, email, remote_user_id: r.remoteUserId, via_installation: r.viaInstallation };
  v.ref = r.ref;
  v.outcome = r.outcome;
  v.exit_code = r.exitCode;
  v.args_digest = r.argsDigest;
  v.digest_key_id = r.digestKeyId;
  if (r.promptTokens !== null) {
    v.prompt_tokens = r.promptTokens;
    v.completion_tokens = r.completionTokens;
  }
  if (r.cost !== null) v.cost = r.cost;
  if (r.durationMs !== null) v.duration_ms = r.durationMs;
  if (r.chainId !== null) {
    v.chain_id = r.chainId;
    v.chain_seq = r.chainSeq;
    v.chain_prev = r.chainPrev;
  }
  if (r.actorId !== null) v.actor_id = r.actorId;
  if (r.target !== null) v.target = r.target;
  if (r.detail !== null) {
    const admin = adminDetail(r.detail);
    if (admin !== undefined) v.admin = admin;
  }
  if (r.storeChain !== null) v.store = { chain: r.storeChain, seq: r.storeSeq, prev: r.storePrev };
  v.encryption = r.recipientKeyIds.length > 0 ? { mode: "recipients", key_ids: r.recipientKeyIds } : { mode: "digest-only" };
  return v;
}

/** What the view shows of a record: the fields marked optional are there only when set. */
type View = {
  id: string;
  ts: string;
  received_at: string;
  kind: Row["kind"];
  harness: string;
  organization_id: string;
  workspace_id: string;
  installation_id: string;
  agent_id: string;
  replica_id: string | null;
  action: string;
  tool_name: string | null;
  tool_server?: string;
  upstream_identity?: UpstreamIdentity;
  model: string | null;
  task?: string;
  decision: Row["decision"];
  reason: string;
  policy_id: string | null;
  policy_revision: number;
  shadow?: { decision: NonNullable<Row["shadowDecision"]>; policy_id: string | null; reason: string };
  subject: { user_id: string | null; email: string | null; remote_user_id: string | null; via_installation: boolean };
  ref: string | null;
  outcome: string | null;
  exit_code: number | null;
  args_digest: string | null;
  digest_key_id: string | null;
  prompt_tokens?: number;
  completion_tokens?: number | null;
  cost?: number;
  duration_ms?: number;
  chain_id?: string;
  chain_seq?: number | null;
  chain_prev?: string | null;
  actor_id?: string;
  target?: string;
  admin?: AdminEventDetail;
  store?: { chain: string; seq: number | null; prev: string | null };
  encryption: { mode: "recipients"; key_ids: string[] } | { mode: "digest-only" };
};

/** An admin event's detail as the view shows it; text that is not JSON (a row changed in the store) is left out, never a failed page. */
function adminDetail(text: string): AdminEventDetail | undefined {
  try {
    return JSON.parse(text) as AdminEventDetail;
  } catch {
    return undefined;
  }
}
