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
   * session's stored hash, never the cookie), an API token (`tok_…`, never the token), an
   * approved `svc login` request redeemed by its poll secret (`login_request`, its id), a
   * one-time link (`link`: an invite, its id), the control plane itself (`system`), or nothing
   * (`none`: a refused request, a failed sign-in).
   */
  credential: open({
    kind: Type.Union([Type.Literal("session"), Type.Literal("api_token"), Type.Literal("login_request"), Type.Literal("link"), Type.Literal("system"), Type.Literal("none")]),
    id: Nullable(Type.String()),
  }),
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

type ActionSpec = {
  /** the `target.type` of its events */
  target: string;
  /** the severity of a successful event (a refusal is always "high") */
  severity: AdminSeverity;
  /** the HTTP status the API answers it with (0: the control plane's own work, no request) */
  status: number;
  /** when it is written, in words (docs/audit.md, `svc audit list --action` help) */
  when: string;
};

/**
 * Every admin event the control plane writes: the one list the services, docs/audit.md, the
 * CLI's `--action` check and the tests share. Names are `<resource>.<verb>`, snake_case; the
 * escrow recovery steps keep their names of issue 15 (`audit:recovery.*`).
 */
export const ADMIN_ACTIONS = {
  // the organization and its people
  "organization.bootstrap": { target: "organization", severity: "high", status: 0, when: "`svc controlplane bootstrap-admin` created the organization and its first owner" },
  "workspace.create": { target: "workspace", severity: "info", status: 201, when: "a workspace was created" },
  "member.add": { target: "member", severity: "notice", status: 201, when: "an account became a member (created when new)" },
  "member.role_change": { target: "member", severity: "notice", status: 201, when: "a member's role changed (high when owner is given or taken)" },
  "member.remove": { target: "member", severity: "notice", status: 204, when: "a member was removed (its sessions and API tokens here end)" },
  "invite.create": { target: "invite", severity: "info", status: 201, when: "a chat user was invited to set a chat password" },
  "invite.accept": { target: "invite", severity: "info", status: 303, when: "an invited chat user set their chat password" },
  "settings.update": { target: "organization", severity: "notice", status: 200, when: "organization settings changed (high when the escrow switch moved)" },
  "sso.configure": { target: "sso", severity: "high", status: 303, when: "single sign-on was set up or changed (console)" },
  "sso.remove": { target: "sso", severity: "high", status: 303, when: "single sign-on was removed (console)" },
  // credentials and sessions
  "api_token.create": { target: "api_token", severity: "notice", status: 201, when: "an API token was issued (the API, `svc login`, bootstrap)" },
  "api_token.revoke": { target: "api_token", severity: "notice", status: 204, when: "an API token was revoked" },
  "login_request.approve": { target: "login_request", severity: "notice", status: 200, when: "a `svc login` request was approved in the console" },
  "session.sign_in": { target: "session", severity: "info", status: 200, when: "a console session was opened (password, single sign-on, or switching organization)" },
  "session.sign_in_failed": { target: "account", severity: "notice", status: 401, when: "a password sign-in failed (one event in each organization of the account; none for an unknown email)" },
  "session.locked_out": { target: "account", severity: "high", status: 429, when: "a sign-in was refused by the failure limit (once per window)" },
  "session.sign_out": { target: "session", severity: "info", status: 204, when: "a console session was signed out" },
  // the directory
  "user.create": { target: "user", severity: "info", status: 201, when: "a service user was created" },
  "user.disable": { target: "user", severity: "notice", status: 200, when: "a service user was disabled" },
  "user.enable": { target: "user", severity: "notice", status: 200, when: "a service user was enabled" },
  "remote_identity.link": { target: "remote_identity", severity: "notice", status: 201, when: "a front-end user was linked to a service user by hand" },
  "remote_identity.unlink": { target: "remote_identity", severity: "notice", status: 200, when: "a front-end user was unlinked" },
  "remote_identity.claim": { target: "remote_identity", severity: "notice", status: 303, when: "a chat user linked their front-end account through a claim link (console)" },
  "group.create": { target: "group", severity: "info", status: 201, when: "a group was created" },
  "group.member_add": { target: "group", severity: "info", status: 204, when: "a user was added to a group" },
  "group.member_remove": { target: "group", severity: "info", status: 204, when: "a user was removed from a group" },
  "directory_sync.configure": { target: "directory_sync", severity: "notice", status: 200, when: "the directory-sync configuration was set" },
  "directory_sync.enable": { target: "directory_sync", severity: "notice", status: 200, when: "directory sync was enabled" },
  "directory_sync.disable": { target: "directory_sync", severity: "notice", status: 200, when: "directory sync was disabled" },
  "directory_sync.run": { target: "directory_sync", severity: "info", status: 200, when: "a directory-sync run finished (by an admin, or scheduled: system:directory-sync)" },
  // runtimes
  "agent.create": { target: "agent", severity: "info", status: 201, when: "an agent was created" },
  "installation.create": { target: "installation", severity: "info", status: 201, when: "an installation was created" },
  "installation.delete": { target: "installation", severity: "notice", status: 204, when: "an installation was deleted (its runtime token stops working)" },
  "runtime_credential.issue": { target: "installation", severity: "notice", status: 200, when: "an installation's first runtime token was issued" },
  "runtime_credential.rotate": { target: "installation", severity: "notice", status: 200, when: "an installation's runtime token was replaced" },
  "model_profile.create": { target: "model_profile", severity: "info", status: 201, when: "a model profile was created" },
  "model_profile.api_key_set": { target: "model_profile", severity: "notice", status: 200, when: "a model profile's sealed API key was replaced" },
  "model_profile.prices_set": { target: "model_profile", severity: "info", status: 200, when: "a model profile's prices were replaced" },
  "model_profile.assign": { target: "model_profile", severity: "info", status: 200, when: "a model profile was assigned to an agent" },
  "tool_server.create": { target: "tool_server", severity: "info", status: 201, when: "an MCP tool server was created" },
  "tool_server.update": { target: "tool_server", severity: "info", status: 200, when: "a tool server's url, command, secrets, allow-list or overrides changed" },
  "tool_server.secrets_set": { target: "tool_server", severity: "notice", status: 200, when: "a tool server's sealed secrets were replaced" },
  "tool_server.tools_set": { target: "tool_server", severity: "info", status: 200, when: "a tool server's allow-list and access overrides were replaced" },
  "tool_server.delete": { target: "tool_server", severity: "notice", status: 204, when: "a tool server was deleted" },
  "tool_server.assign": { target: "tool_server", severity: "info", status: 200, when: "a tool server was assigned to an agent" },
  "tool_server.unassign": { target: "tool_server", severity: "info", status: 200, when: "a tool server was taken away from an agent" },
  "tool_server.token_revoke": { target: "tool_server", severity: "notice", status: 204, when: "an admin revoked a user's OAuth tokens (or the listing grant) for a tool server (issue 32)" },
  "tool_server.listing_connect": { target: "tool_server", severity: "info", status: 201, when: "an admin asked for the consent link of an OAuth tool server's listing grant (issue 32)" },
  "tool_server.consent_refuse": {
    target: "tool_server",
    severity: "high",
    status: 403,
    when: "a user's OAuth consent was refused: the authorization server signed in someone with another email than the link's user (a forwarded link)",
  },
  // what is decided
  "policy.create": { target: "policy", severity: "notice", status: 201, when: "a policy was created" },
  "policy.update": { target: "policy", severity: "notice", status: 200, when: "a policy was changed" },
  "policy.delete": { target: "policy", severity: "notice", status: 204, when: "a policy was deleted" },
  "policy.apply": { target: "workspace", severity: "notice", status: 200, when: "`svc policies apply` made a workspace's policies a given set (one event for the whole apply)" },
  "budget.create": { target: "budget", severity: "info", status: 201, when: "a budget was created" },
  "budget.delete": { target: "budget", severity: "info", status: 200, when: "a budget was deleted" },
  // the audit itself
  "audit_key.create": { target: "audit_key", severity: "high", status: 201, when: "a customer audit-encryption key was registered" },
  "audit_key.disable": { target: "audit_key", severity: "high", status: 200, when: "an audit-encryption key was disabled (by an admin, or by the control plane when unusable)" },
  "audit:recovery.request": { target: "recovery_request", severity: "high", status: 201, when: "an owner asked to decrypt one record with the escrow identity" },
  "audit:recovery.approve": { target: "recovery_request", severity: "high", status: 200, when: "a second person approved an escrow recovery" },
  "audit:recovery.decrypt": { target: "recovery_request", severity: "high", status: 200, when: "the plaintext of an approved recovery was handed out (once)" },
  "audit:recovery.policy": { target: "recovery_policy", severity: "high", status: 200, when: "an owner changed the minimum age of an approver's membership (the two-person rule)" },
  "signing_key.rotate": {
    target: "audit_signing_key",
    severity: "high",
    status: 200,
    when: "an owner rotated the checkpoint-signing key (`svc audit signing-key rotate`), in the hand-over checkpoint signed by the old key; a refused attempt too",
  },
  "digest_key.rotate": { target: "digest_key", severity: "high", status: 201, when: "`svc audit digest-key rotate` made a new current digest key (the retired one is kept for grouping)" },
  "assertion_key.rotate": {
    target: "assertion_key",
    severity: "high",
    status: 201,
    when: "`svc tool-servers assertion-keys rotate` made a new identity-assertion signing key (the previous one stays in the JWKS until what it signed has expired, or is withdrawn at once)",
  },
  "audit_verification.run": {
    target: "audit_verification",
    severity: "info",
    status: 202,
    when: "the control plane finished verifying its own store (Verify now by an admin, or scheduled: system:controlplane): the outcome and its seal; high when tampered",
  },
  "audit_retention.run": { target: "organization", severity: "notice", status: 200, when: "records older than the retention period were deleted (by an admin, or hourly: system:retention)" },
  "siem_sink.create": { target: "siem_sink", severity: "notice", status: 201, when: "a SIEM sink was created" },
  "siem_sink.delete": { target: "siem_sink", severity: "notice", status: 200, when: "a SIEM sink was deleted" },
  "siem_sink.update": { target: "siem_sink", severity: "notice", status: 200, when: "a SIEM sink's event format was changed" },
  // refusals (one hook at the HTTP layer, bounded: docs/audit.md)
  "access.refused": { target: "route", severity: "high", status: 403, when: "an admin route of the organization answered 401 or 403" },
  "access.refusals_suppressed": { target: "route", severity: "high", status: 0, when: "refusals past the bound were counted, not written: how many, per address and code" },
} as const satisfies Record<string, ActionSpec>;

export type AdminAction = keyof typeof ADMIN_ACTIONS;

export function isAdminAction(name: string): name is AdminAction {
  return Object.hasOwn(ADMIN_ACTIONS, name);
}

/**
 * An `--action` / `?action=` filter: an action name, or a prefix ending in `*` (`policy.*`).
 * Returns what is wrong with it, or null.
 */
export function actionFilterProblem(filter: string): string | null {
  if (filter.endsWith("*")) {
    const prefix = filter.slice(0, -1);
    if (prefix.includes("*")) return `"${filter}": only one * is allowed, at the end`;
    return Object.keys(ADMIN_ACTIONS).some((a) => a.startsWith(prefix)) ? null : `no admin action starts with "${prefix}"`;
  }
  return isAdminAction(filter) ? null : `"${filter}" is not an admin action (docs/audit.md lists them; a prefix ends with *, as in policy.*)`;
}

/** One field of an event's before and after (`undefined`: the field was not there). */
export type FieldChange = { field: string; before: unknown; after: unknown; changed: boolean };

/**
 * An event's before and after, field by field (top-level fields; a value that is not an object
 * is the field `value`), each marked when it differs: what `svc audit show` and the console
 * show. Pure.
 */
export function fieldChanges(before: unknown, after: unknown): FieldChange[] {
  const obj = (v: unknown): Record<string, unknown> => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : v === undefined ? {} : { value: v });
  const b = obj(before);
  const a = obj(after);
  return [...new Set([...Object.keys(b), ...Object.keys(a)])].map((field) => ({ field, before: b[field], after: a[field], changed: JSON.stringify(b[field]) !== JSON.stringify(a[field]) }));
}
