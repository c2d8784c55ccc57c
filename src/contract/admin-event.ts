// The admin trail (issue 27): every change to the admin plane, and every refusal of one, is an
// audit record of kind "admin" written by the control plane itself, in the same hash chain and
// signed checkpoints as the runtimes' decisions. This module is the event's shape as stored
// (the record's `detail` column, JSON text) and as the admin API, the export and the SIEM sinks
// show it. Secrets never appear: a secret value is shown only as a digest of it
// (controlplane/audit/admin-events.ts secretDigest), and a password only as "(set)".
// Types only (the generated-client test compiles this without Bun's or Node's types).
import { type Static, Type } from "@sinclair/typebox";
import { Nullable, open } from "./admin-shape.ts";

/** `actor_id` of events no person caused: `system:bootstrap`, `system:directory-sync`, … */
export const SYSTEM_ACTOR_PREFIX = "system:";
/** `actor_id` of a refusal whose caller proved no identity (401). */
export const ANONYMOUS_ACTOR = "anonymous";

export const AdminActor = open({
  /** `acc_…` for a person, `system:<component>`, or `anonymous` (a 401) */
  id: Type.String(),
  email: Nullable(Type.String()),
  role: Nullable(Type.String()),
  /**
   * How the actor proved who they are: a console session (its id is the first 16 hex of the
   * session's stored hash, never the cookie), an API token (`tok_…`, never the token), the
   * control plane itself (`system`), or nothing (`none`).
   */
  credential: open({ kind: Type.Union([Type.Literal("session"), Type.Literal("api_token"), Type.Literal("system"), Type.Literal("none")]), id: Nullable(Type.String()) }),
  ip: Nullable(Type.String()),
  user_agent: Nullable(Type.String()),
});
export type AdminActor = Static<typeof AdminActor>;

export const AdminTarget = open({
  /** the resource kind: policy, member, api_token, installation, settings, … */
  type: Type.String(),
  id: Nullable(Type.String()),
  /** a human name (policy name, email, key name) when the resource has one */
  name: Type.Optional(Nullable(Type.String())),
});
export type AdminTarget = Static<typeof AdminTarget>;

export const AdminSeverity = Type.Union([Type.Literal("info"), Type.Literal("notice"), Type.Literal("high")]);
export type AdminSeverity = Static<typeof AdminSeverity>;

export const AdminResult = Type.Union([Type.Literal("ok"), Type.Literal("refused")]);
export type AdminResult = Static<typeof AdminResult>;

/** The `detail` of an admin event. */
export const AdminEventDetail = open({
  v: Type.Literal(1),
  actor: AdminActor,
  target: AdminTarget,
  /** the resource before the change (absent for a creation or a refusal), secrets as digests */
  before: Type.Optional(Type.Unknown()),
  /** the resource after the change (absent for a deletion or a refusal), secrets as digests */
  after: Type.Optional(Type.Unknown()),
  result: AdminResult,
  /** the HTTP status the request was answered with; 0 for work with no request (a scheduler) */
  status: Type.Integer(),
  /** the problem code of a refusal (unauthorized, forbidden, recovery_self_approval, …) */
  code: Type.Optional(Type.String()),
  /** "high" for the two-person rule's steps, escrow and key changes, and refusals (SIEM severity) */
  severity: AdminSeverity,
});
export type AdminEventDetail = Static<typeof AdminEventDetail>;

/** What a password (low entropy: a digest could be guessed) looks like in an admin event. */
export const PASSWORD_SET = "(set)";
