// An audit record as the admin API shows it (never its ciphertext): pure, shared by search,
// export and the admin trail without their queries.
import type { AdminEventDetail } from "../../contract/admin-event.ts";
import type { UpstreamIdentity } from "../../contract/audit.ts";
import type { ExportLine } from "../../contract/stored-line.ts";
import type { Tables } from "../db/index.ts";

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
    // the first fields: every one the view always shows but those assigned below (a field the
    // contract adds is missing here, a field it drops is one too many)
  } satisfies Omit<View, AssignedLater> as View;
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

/**
 * What the view shows of a record: the contract's export line (contract/stored-line.ts) without
 * what the export adds, more precise where the view is. Every part names the line's own fields,
 * so renaming, removing or retyping one there breaks the compile here (and recordView's
 * assignments).
 */
type Line = Omit<ExportLine, "ciphertext_sha256" | "columns">;
/** Always set (the line lets an older export leave them out). */
type Always = "replica_id" | "model" | "policy_id" | "ref" | "outcome" | "exit_code";
/** Set only when the row has a value: never null. */
type WhenSet = "tool_server" | "upstream_identity" | "task" | "prompt_tokens" | "cost" | "duration_ms" | "chain_id" | "actor_id" | "target" | "store";
type Refined = {
  kind: Line["kind"] & Row["kind"];
  decision: Line["decision"] & Row["decision"];
  subject: Required<Line["subject"]>;
  shadow?: NonNullable<Line["shadow"]> & { decision: NonNullable<Row["shadowDecision"]>; reason: string };
  admin?: Line["admin"] & AdminEventDetail;
};
/** The fields always shown that recordView assigns after its first ones, in the order they are shown. */
type AssignedLater = "model" | "decision" | "reason" | "policy_id" | "policy_revision" | "subject" | "ref" | "outcome" | "exit_code" | "args_digest" | "digest_key_id" | "encryption";
type Flat<T> = { [K in keyof T]: T[K] };
type View = Flat<Omit<Line, Always | WhenSet | keyof Refined> & Required<Pick<Line, Always>> & { [K in WhenSet]?: NonNullable<Line[K]> } & Refined>;

/** An admin event's detail as the view shows it; text that is not JSON (a row changed in the store) is left out, never a failed page. */
function adminDetail(text: string): AdminEventDetail | undefined {
  try {
    return JSON.parse(text) as AdminEventDetail;
  } catch {
    return undefined;
  }
}
