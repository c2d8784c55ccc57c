// The audit record (spec §2): written by the proxy to its spool, shipped in batches to
// POST /api/v1/runtime/audit-records, stored by the control plane. Call content (arguments,
// payload) exists only as age ciphertext to the active recipients, or not at all
// (digest-only: args_digest + digest_key_id).
import { type Static, Type } from "@sinclair/typebox";

export const Decision = Type.Union([Type.Literal("permit"), Type.Literal("deny"), Type.Literal("ask")]);
export type Decision = Static<typeof Decision>;

export const AuditKind = Type.Union([Type.Literal("tool"), Type.Literal("model"), Type.Literal("outcome")]);
export type AuditKind = Static<typeof AuditKind>;

export const AuditSubject = Type.Object({
  /** The service user the front-end user resolved to; null when unlinked or no session user. */
  user_id: Type.Union([Type.String(), Type.Null()]),
  /** The front-end (chatui) user id, when the call had a session user. */
  remote_user_id: Type.Union([Type.String(), Type.Null()]),
  /** True when the record falls back to the installation's subject (no session user). */
  via_installation: Type.Boolean(),
});
export type AuditSubject = Static<typeof AuditSubject>;

export const AuditRecord = Type.Object({
  id: Type.String({ pattern: "^rec_[0-9A-Z]{26}$" }),
  ts: Type.String({ format: "date-time" }),
  kind: AuditKind,
  harness: Type.Literal("chatui"),
  organization_id: Type.String(),
  workspace_id: Type.String(),
  installation_id: Type.String(),
  agent_id: Type.String(),
  replica_id: Type.Optional(Type.String()),
  /** `tool:<name>` or `model:invoke`. */
  action: Type.String(),
  tool_name: Type.Union([Type.String(), Type.Null()]),
  model: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  decision: Decision,
  /** Why: a refusal code (svc.denied, identity.unlinked, tool_not_registered) or "policy". */
  reason: Type.String(),
  policy_id: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  policy_revision: Type.Integer(),
  subject: AuditSubject,
  /** For kind "outcome": the id of the decision record this outcome belongs to. */
  ref: Type.Optional(Type.String()),
  outcome: Type.Optional(Type.Union([Type.Literal("ok"), Type.Literal("error"), Type.Null()])),
  exit_code: Type.Optional(Type.Union([Type.Integer(), Type.Null()])),
  args_digest: Type.Union([Type.String({ pattern: "^hmac-sha256:[0-9a-f]{64}$" }), Type.Null()]),
  digest_key_id: Type.Union([Type.String(), Type.Null()]),
  recipient_key_ids: Type.Array(Type.String()),
  /** base64 of a binary age v1 file holding the canonical JSON {arguments, payload}. */
  ciphertext: Type.Union([Type.String(), Type.Null()]),
});
export type AuditRecord = Static<typeof AuditRecord>;
