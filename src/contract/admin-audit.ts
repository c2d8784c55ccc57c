// Admin answers about the audit trail and usage: records as searched (`svc audit list|show`,
// the console's audit pages), model usage (`svc usage`, the console's usage page) and budgets
// (`svc budgets`). See admin-api.ts.
import { type Static, Type } from "@sinclair/typebox";
import { AdminEventDetail } from "./admin-event.ts";
import { Nullable, Time, listOf, open } from "./admin-shape.ts";
import { BudgetState } from "./runtime-api.ts";

const Str = Type.String();
const OptionalNullable = <T extends Parameters<typeof Nullable>[0]>(t: T) => Type.Optional(Nullable(t));

/** An audit record as the admin API shows it (never its ciphertext). */
export const AuditRecordView = open({
  id: Str,
  ts: Time,
  received_at: Time,
  kind: Type.Union([Type.Literal("tool"), Type.Literal("model"), Type.Literal("outcome"), Type.Literal("admin")]),
  harness: Str,
  organization_id: Str,
  workspace_id: Str,
  installation_id: Str,
  agent_id: Str,
  replica_id: Nullable(Str),
  action: Str,
  tool_name: Nullable(Str),
  /** The MCP server of the tool (issue 13); absent for pack tools and models. */
  tool_server: Type.Optional(Str),
  model: Nullable(Str),
  /** Open WebUI's background task (title_generation, …); absent for a user's own turn. */
  task: Type.Optional(Str),
  decision: Type.Union([Type.Literal("permit"), Type.Literal("deny"), Type.Literal("ask")]),
  reason: Str,
  policy_id: Nullable(Str),
  policy_revision: Type.Integer(),
  /** What a shadow policy would have decided (issue 17); absent when none applied. */
  shadow: Type.Optional(open({ decision: Str, policy_id: Nullable(Str), reason: Str })),
  subject: open({ user_id: Nullable(Str), email: Nullable(Str), remote_user_id: Nullable(Str), via_installation: Type.Boolean() }),
  ref: Nullable(Str),
  outcome: Nullable(Str),
  exit_code: Nullable(Type.Integer()),
  args_digest: Nullable(Str),
  digest_key_id: Nullable(Str),
  prompt_tokens: Type.Optional(Type.Integer()),
  completion_tokens: OptionalNullable(Type.Integer()),
  cost: Type.Optional(Type.Number()),
  duration_ms: Type.Optional(Type.Integer()),
  /** The identity an MCP call presented upstream (issue 32): the assertion's jti and subject, or the OAuth subject; never a token. */
  upstream_identity: Type.Optional(open({ kind: Type.Union([Type.Literal("assertion"), Type.Literal("oauth")]), jti: Type.Optional(Str), subject: Type.Union([Str, Type.Null()]) })),
  chain_id: Type.Optional(Str),
  chain_seq: OptionalNullable(Type.Integer()),
  chain_prev: OptionalNullable(Str),
  /** Admin events (kind "admin", issue 27): who acted, on what, and the event's account (admin-event.ts). */
  actor_id: Type.Optional(Str),
  target: Type.Optional(Str),
  admin: Type.Optional(AdminEventDetail),
  /** The record's link in its organization's store chain (contract/store-chain.ts); absent on a row not yet linked. */
  store: Type.Optional(open({ chain: Str, seq: Nullable(Type.Integer()), prev: Nullable(Str) })),
  encryption: Type.Union([open({ mode: Type.Literal("recipients"), key_ids: Type.Array(Str) }), open({ mode: Type.Literal("digest-only") })]),
  /**
   * A decision's outcome record, summarized (issue 33): on one record (GET …/{id}) and in a
   * search with view=calls; null while no outcome arrived; absent otherwise.
   */
  call_outcome: OptionalNullable(
    open({
      id: Str,
      ts: Time,
      outcome: Nullable(Str),
      exit_code: Nullable(Type.Integer()),
      duration_ms: Type.Optional(Type.Integer()),
      prompt_tokens: Type.Optional(Type.Integer()),
      completion_tokens: OptionalNullable(Type.Integer()),
      cost: Type.Optional(Type.Number()),
    }),
  ),
});
export type AuditRecordView = Static<typeof AuditRecordView>;
/** A page of a search, newest first; `next_cursor` fetches the next. */
export const AuditRecordPage = open({ records: Type.Array(AuditRecordView), next_cursor: Nullable(Str) });
export type AuditRecordPage = Static<typeof AuditRecordPage>;

/** Model usage of one user, group, model or agent (`key` null: none recorded). */
export const UsageRow = open({
  key: Nullable(Str),
  label: Nullable(Str),
  calls: Type.Integer(),
  prompt_tokens: Type.Number(),
  completion_tokens: Type.Number(),
  total_tokens: Type.Number(),
  cost: Type.Number(),
});
export type UsageRow = Static<typeof UsageRow>;
export const UsageReport = open({ by: Str, since: Time, until: Nullable(Time), rows: Type.Array(UsageRow) });
export type UsageReport = Static<typeof UsageReport>;
export const UsagePoint = open({ bucket: Time, key: Nullable(Str), total_tokens: Type.Number(), cost: Type.Number() });
export type UsagePoint = Static<typeof UsagePoint>;
export const UsageSeries = listOf("points", UsagePoint);

/** A budget as admins see it: its state, the target's label and the share used. */
export const Budget = Type.Composite([BudgetState, open({ target: Str, used: Type.Number(), created_at: Time })], { additionalProperties: true });
export type Budget = Static<typeof Budget>;
export const BudgetList = listOf("budgets", Budget);
export const BudgetDeleted = open({ deleted: Str, name: Str });

const Who = open({ account_id: Str, email: Nullable(Str) });
/** An escrow recovery request (…/audit-recovery-requests). */
export const RecoveryRequest = open({
  id: Str,
  record_id: Str,
  reason: Str,
  status: Type.Union([Type.Literal("pending"), Type.Literal("approved"), Type.Literal("consumed")]),
  requested_by: Who,
  approved_by: Nullable(Who),
  created_at: Time,
  approved_at: Nullable(Time),
  consumed_at: Nullable(Time),
});
export type RecoveryRequest = Static<typeof RecoveryRequest>;
export const RecoveryRequestList = listOf("requests", RecoveryRequest);

/** The organization's rule for recovery approvers (…/audit-recovery-policy, issue 27). */
export const RecoveryPolicy = open({
  /** the setting: hours an approver must have been a member when the request was made */
  approver_min_age_hours: Type.Integer(),
  /** the age that holds for a request made now (a lowering waits out the age it replaced) */
  effective_min_age_hours: Type.Integer(),
  /** when a lowering starts to hold (null: none pending) */
  lowering_effective_at: Nullable(Time),
  /** approval needs a sign-in within this many minutes */
  fresh_sign_in_minutes: Type.Integer(),
  changed_at: Nullable(Time),
  changed_by: Nullable(Who),
});
export type RecoveryPolicy = Static<typeof RecoveryPolicy>;

/** A notice for owners and admins (…/notices): another person's escrow recovery step, until dismissed. */
export const Notice = open({ id: Str, action: Str, result: Type.Union([Type.Literal("ok"), Type.Literal("refused")]), text: Str, ref: Nullable(Str), event_id: Nullable(Str), created_at: Time });
export type Notice = Static<typeof Notice>;
export const NoticeList = listOf("notices", Notice);

/** The console overview's figures (…/audit-activity): decisions per hour, top tools and users. */
export const Activity = open({
  since: Time,
  hours: Type.Array(open({ hour: Time, permit: Type.Integer(), deny: Type.Integer() })),
  top_tools: Type.Array(open({ tool: Str, calls: Type.Integer(), denied: Type.Integer() })),
  top_users: Type.Array(open({ user_id: Str, email: Nullable(Str), calls: Type.Integer(), denied: Type.Integer() })),
});
export type Activity = Static<typeof Activity>;

/** What a retention run deleted (…/audit-retention/run). */
export const RetentionReport = open({
  organization_id: Str,
  retention_days: Nullable(Type.Integer()),
  cutoff: Nullable(Time),
  deleted: Type.Integer(),
  chains_cut: Type.Integer(),
  /** The checkpoint signing the new chain floors; null when nothing was deleted. */
  checkpoint: Nullable(Type.Integer()),
});
export type RetentionReport = Static<typeof RetentionReport>;

/**
 * A retention run in the background (POST …/audit-retention/run answers 202 with it; GET
 * …/audit-retention/run shows the latest): the report's figures so far, and its state.
 * `interrupted`: its control plane stopped during the run (no batch for a while); start another.
 */
export const RetentionRun = open({
  ...RetentionReport.properties,
  id: Str,
  state: Type.Union([Type.Literal("running"), Type.Literal("done"), Type.Literal("failed"), Type.Literal("interrupted")]),
  /** account id of the admin who asked, or system:retention */
  actor: Str,
  started_at: Time,
  /** the last batch */
  updated_at: Time,
  finished_at: Nullable(Time),
  detail: Nullable(Str),
});
export type RetentionRun = Static<typeof RetentionRun>;

/** A signed checkpoint of the organization's chain heads (`svc audit verify` checks records against them). */
export const Checkpoint = open({ id: Str, number: Type.Integer(), at: Time, body: Str, signature: Str });
export type Checkpoint = Static<typeof Checkpoint>;
/**
 * Every checkpoint, oldest first, with the organization's Ed25519 public key as the control plane
 * derives it from the private key it signs with (null before there is one) and its fingerprint;
 * `next_at`: when the periodic checkpoint is next due (null when this replica runs none).
 */
export const CheckpointList = open({
  public_key: Nullable(Str),
  fingerprint: Type.Optional(Nullable(Str)),
  next_at: Type.Optional(Nullable(Time)),
  checkpoints: Type.Array(Checkpoint),
});
export type CheckpointList = Static<typeof CheckpointList>;
/** The organization's checkpoint-signing key (…/audit-signing-key), and after a rotation the checkpoint that handed it over. */
export const SigningKey = open({ public_key: Str, fingerprint: Str, created_at: Time, handover_checkpoint: Type.Optional(Type.Integer()) });
export type SigningKey = Static<typeof SigningKey>;
/** The control plane's own verification of its store (…/audit-verifications). */
export const StoreVerification = open({
  id: Str,
  state: Type.Union([Type.Literal("running"), Type.Literal("verified"), Type.Literal("unsigned"), Type.Literal("tampered"), Type.Literal("failed")]),
  started_at: Time,
  finished_at: Nullable(Time),
  records: Type.Integer(),
  checkpoint: Nullable(Type.Integer()),
  problems: Type.Integer(),
  detail: Nullable(Str),
  /** keys of (organization, hour) whose roll-ups (what budgets and usage read) differ from the records' sums; counted in problems too */
  rollup_mismatches: Type.Integer(),
  /** what the first of them said: the hour, the key, the roll-up's figures and the records' */
  rollup_detail: Nullable(Str),
});
export type StoreVerification = Static<typeof StoreVerification>;
/** A gap, fork or late record seen at ingest. */
export const ChainFlag = open({ id: Str, chain_id: Str, installation_id: Str, kind: Str, record_id: Str, seq: Type.Integer(), detail: Str, at: Time });
export type ChainFlag = Static<typeof ChainFlag>;
export const ChainFlagList = listOf("flags", ChainFlag);
