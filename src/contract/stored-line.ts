// An export line (`svc audit export`, JSONL) back to the stored record its store-chain form
// covers (store-chain.ts). The line is the record as the admin API shows it: a few columns
// are shown in a shape that cannot hold every value a row could hold (the shadow decision as
// one object, the chain fields only with a chain id, usage tokens only with prompt tokens, the
// admin detail parsed). For a row whose values such a shape would lose (a row someone changed
// in the store), the export adds `columns` with those columns exactly, so the form computed
// here is always the form of the stored row: a change is never hidden by the view. Pure.
import type { StoredRecord } from "./store-chain.ts";
import { type UpstreamIdentity, upstreamIdentityText } from "./audit.ts";

/** An export line as `svc audit verify` reads it: the record view plus what export adds. */
export type ExportLine = {
  id: string;
  ts: string;
  received_at: string;
  kind: string;
  harness: string;
  organization_id: string;
  workspace_id: string;
  installation_id: string;
  agent_id: string;
  replica_id?: string | null;
  action: string;
  tool_name: string | null;
  tool_server?: string | null;
  upstream_identity?: UpstreamIdentity | null;
  model?: string | null;
  task?: string | null;
  decision: string;
  reason: string;
  policy_id?: string | null;
  policy_revision: number;
  shadow?: { decision: string | null; policy_id: string | null; reason: string | null } | null;
  subject: { user_id: string | null; remote_user_id: string | null; via_installation: boolean; email?: string | null };
  ref?: string | null;
  outcome?: string | null;
  exit_code?: number | null;
  args_digest: string | null;
  digest_key_id: string | null;
  prompt_tokens?: number | null;
  completion_tokens?: number | null;
  cost?: number | null;
  duration_ms?: number | null;
  chain_id?: string | null;
  chain_seq?: number | null;
  chain_prev?: string | null;
  actor_id?: string | null;
  target?: string | null;
  admin?: unknown;
  encryption: { mode: "recipients"; key_ids: string[] } | { mode: "digest-only" };
  ciphertext_sha256: string | null;
  store?: { chain: string; seq: number | null; prev: string | null } | null;
  /** Exact values of the columns the view above cannot show as stored (only on such rows). */
  columns?: Partial<StoredRecord>;
};

const n = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

/** The stored record a line shows (the view's fields, then `columns` over them). */
export function storedFromLine(l: ExportLine): StoredRecord {
  return storedOfLine(l, Date.parse(l.ts), Date.parse(l.received_at));
}

/** storedFromLine with the line's two times already read (`ts`, `receivedAt`: epoch ms). */
export function storedOfLine(l: ExportLine, ts: number, receivedAt: number): StoredRecord {
  const r: StoredRecord = {
    id: l.id,
    organization_id: l.organization_id,
    workspace_id: l.workspace_id,
    installation_id: l.installation_id,
    agent_id: l.agent_id,
    replica_id: n(l.replica_id),
    ts,
    received_at: receivedAt,
    kind: l.kind,
    harness: l.harness,
    action: l.action,
    tool_name: l.tool_name,
    tool_server: n(l.tool_server),
    upstream_identity: upstreamIdentityText(l.upstream_identity),
    model: n(l.model),
    task: n(l.task),
    decision: l.decision,
    reason: l.reason,
    policy_id: n(l.policy_id),
    policy_revision: l.policy_revision,
    shadow_decision: l.shadow ? l.shadow.decision : null,
    shadow_policy_id: l.shadow ? l.shadow.policy_id : null,
    shadow_reason: l.shadow ? l.shadow.reason : null,
    user_id: l.subject.user_id,
    remote_user_id: l.subject.remote_user_id,
    via_installation: l.subject.via_installation,
    ref: n(l.ref),
    outcome: n(l.outcome),
    exit_code: n(l.exit_code),
    args_digest: l.args_digest,
    digest_key_id: l.digest_key_id,
    recipient_key_ids: l.encryption.mode === "recipients" ? l.encryption.key_ids : [],
    ciphertext_sha256: l.ciphertext_sha256,
    prompt_tokens: n(l.prompt_tokens),
    completion_tokens: n(l.completion_tokens),
    cost: n(l.cost),
    duration_ms: n(l.duration_ms),
    chain_id: n(l.chain_id),
    chain_seq: n(l.chain_seq),
    chain_prev: n(l.chain_prev),
    actor_id: n(l.actor_id),
    target: n(l.target),
    detail: l.admin === undefined ? null : JSON.stringify(l.admin),
  };
  return l.columns ? { ...r, ...l.columns } : r;
}
