// The audit record (spec §2): written by the proxy to its spool, shipped in batches to
// POST /api/v1/runtime/audit-records, stored by the control plane. Call content (arguments,
// payload) exists only as age ciphertext to the active recipients, or not at all
// (digest-only: args_digest + digest_key_id).
import { type Static, Type } from "@sinclair/typebox";
import { UpstreamIdentity } from "./identity-assertion.ts";

export const Decision = Type.Union([Type.Literal("permit"), Type.Literal("deny"), Type.Literal("ask")]);
export type Decision = Static<typeof Decision>;

export const AuditKind = Type.Union([Type.Literal("tool"), Type.Literal("model"), Type.Literal("outcome")]);
export type AuditKind = Static<typeof AuditKind>;

/**
 * Size bounds of a record, checked where the control plane ingests it. Generous for what a
 * proxy writes (ids are ~31 characters, tool names at most 200), small enough that one record
 * cannot fill the store: call content is bounded by `maxCiphertextBase64`.
 */
export const AUDIT_RECORD_LIMITS = {
  id: 64,
  text: 200,
  action: 256,
  model: 1024,
  remoteUserId: 200,
  recipientKeyIds: 64,
  /** base64 characters of the age ciphertext (16 MiB, about 12 MiB of arguments and payload). */
  maxCiphertextBase64: 16 * 1024 * 1024,
  /** Integers fit the store's 32-bit columns. */
  int32: 2_147_483_647,
} as const;

const L = AUDIT_RECORD_LIMITS;
const Id = (o: { pattern?: string } = {}) => Type.String({ minLength: 1, maxLength: L.id, ...o });
const Int32 = (min = -L.int32 - 1) => Type.Integer({ minimum: min, maximum: L.int32 });

export const AuditSubject = Type.Object({
  /** The service user the front-end user resolved to; null when unlinked or no session user. */
  user_id: Type.Union([Id(), Type.Null()]),
  /** The front-end (chatui) user id, when the call had a session user. */
  remote_user_id: Type.Union([Type.String({ maxLength: L.remoteUserId }), Type.Null()]),
  /** True when the record falls back to the installation's subject (no session user). */
  via_installation: Type.Boolean(),
});
export type AuditSubject = Static<typeof AuditSubject>;

/**
 * What the agent's shadow policies (issue 17, `mode: shadow`) would have decided for this call:
 * the decision with enforced and shadow policies together. Present only when a shadow policy
 * named the call's action; the record's own decision is the one that was enforced.
 */
export const AuditShadow = Type.Object({
  decision: Type.Union([Type.Literal("permit"), Type.Literal("deny")]),
  policy_id: Type.Union([Id(), Type.Null()]),
  reason: Type.String({ maxLength: L.text }),
});
export type AuditShadow = Static<typeof AuditShadow>;

export const AuditRecord = Type.Object({
  id: Type.String({ pattern: "^rec_[0-9A-Z]{26}$" }),
  ts: Type.String({ format: "date-time", maxLength: 40 }),
  kind: AuditKind,
  harness: Type.Literal("chatui"),
  organization_id: Id(),
  workspace_id: Id(),
  installation_id: Id(),
  agent_id: Id(),
  replica_id: Type.Optional(Id()),
  /** `tool:<name>` or `model:invoke`. */
  action: Type.String({ minLength: 1, maxLength: L.action }),
  tool_name: Type.Union([Type.String({ maxLength: L.text }), Type.Null()]),
  model: Type.Optional(Type.Union([Type.String({ maxLength: L.model }), Type.Null()])),
  decision: Decision,
  /**
   * Why: a refusal code (svc.denied, identity.unlinked, tool_not_registered) or "policy"; a
   * refusal by a rate limit or a budget names it after the code (`reasonCode` reads the code).
   */
  reason: Type.String({ maxLength: L.text }),
  policy_id: Type.Optional(Type.Union([Id(), Type.Null()])),
  policy_revision: Int32(0),
  subject: AuditSubject,
  shadow: Type.Optional(AuditShadow),
  /** For kind "outcome": the id of the decision record this outcome belongs to. */
  ref: Type.Optional(Type.String({ pattern: "^rec_[0-9A-Z]{26}$" })),
  outcome: Type.Optional(Type.Union([Type.Literal("ok"), Type.Literal("error"), Type.Null()])),
  exit_code: Type.Optional(Type.Union([Int32(), Type.Null()])),
  /**
   * Open WebUI's background task a model call was made for (`title_generation`,
   * `tags_generation`, `follow_up_generation`, …; issue 15), as the front end's Pipe reported
   * it; absent for a user's own turn. Not part of the hash chain's form (audit-chain.ts): it
   * only sorts records in views, never decides anything.
   */
  task: Type.Optional(Type.String({ pattern: "^[a-z][a-z0-9_]{0,63}$" })),
  /** For a tool of an MCP server (issue 13): the server's name (the tool-name prefix). */
  tool_server: Type.Optional(Type.Union([Type.String({ maxLength: L.text }), Type.Null()])),
  /**
   * The identity the call presented upstream (issue 32), on the outcome record of an MCP tool
   * call: the assertion's jti and subject, or the OAuth subject; never the token itself. Absent
   * when the server takes no per-user identity (and on records before issue 32). Not part of the
   * hash chain's form, like `task`.
   */
  upstream_identity: Type.Optional(UpstreamIdentity),
  args_digest: Type.Union([Type.String({ pattern: "^hmac-sha256:[0-9a-f]{64}$" }), Type.Null()]),
  digest_key_id: Type.Union([Id(), Type.Null()]),
  recipient_key_ids: Type.Array(Id(), { maxItems: L.recipientKeyIds }),
  /**
   * Model usage (issue 16), on the outcome record of a model call (kind "outcome", action
   * `model:invoke`, `ref` = its decision record), written when the answer has ended: the
   * provider's own counts (its `usage` field), never encrypted. Absent when the provider
   * reported none. `cost` is in the currency of the model profile's prices (per 1M tokens),
   * absent when the profile has no price for the model.
   */
  prompt_tokens: Type.Optional(Int32(0)),
  completion_tokens: Type.Optional(Int32(0)),
  cost: Type.Optional(Type.Number({ minimum: 0, maximum: 1e12 })),
  /** Milliseconds from sending the model call to the end of its answer (outcome of a model call). */
  duration_ms: Type.Optional(Int32(0)),
  /**
   * Tamper evidence (issue 15, audit-chain.ts): the records one proxy process writes form a
   * hash chain. `chain_id` names it (a new chain each time the proxy starts), `chain_seq`
   * counts from 1, `chain_prev` is the hash of record `chain_seq - 1` (null for the first).
   * Absent on records written before chaining.
   */
  chain_id: Type.Optional(Type.String({ pattern: "^chn_[0-9A-Z]{26}$" })),
  chain_seq: Type.Optional(Int32(1)),
  chain_prev: Type.Optional(Type.Union([Type.String({ pattern: "^[0-9a-f]{64}$" }), Type.Null()])),
  /** base64 of a binary age v1 file holding the canonical JSON {arguments, payload}. */
  ciphertext: Type.Union([Type.String({ maxLength: L.maxCiphertextBase64, pattern: "^[A-Za-z0-9+/]*={0,2}$" }), Type.Null()]),
});
export type AuditRecord = Static<typeof AuditRecord>;

/**
 * The refusal code of a record's `reason`: the reason up to `: `. A refusal by a rate limit or
 * a budget names the limit after its code (`svc.rate_limited: rate limit tool:crm.read=10/min`);
 * metrics count by the code alone. Pure.
 */
export function reasonCode(reason: string): string {
  const at = reason.indexOf(": ");
  return at < 0 ? reason : reason.slice(0, at);
}
