// Answers of the admin API that the CLI and the console both read (issue 20: one typed
// contract, no hand-written copies). The control plane declares them as its routes' `response`
// schemas, so its presenters are type-checked against them and the OpenAPI document carries
// them; the CLI and the console import the Static types. Each object takes fields it does not
// declare (`additionalProperties: true`): a newer control plane may add one without breaking an
// older CLI.
// The answers of each resource live in their own module, re-exported here.
import { type Static, Type } from "@sinclair/typebox";
import { Nullable, Time, open } from "./admin-shape.ts";
import { HeartbeatToolServer } from "./runtime-api.ts";

export * from "./admin-audit.ts";
export * from "./admin-directory.ts";
export * from "./admin-policies.ts";
export * from "./admin-settings.ts";
export * from "./admin-versions.ts";

/** GET /me */
export const Me = open({
  account: open({ id: Type.String(), email: Type.String() }),
  organization: open({ id: Type.String(), name: Type.String() }),
  role: Type.String(),
  /** When the caller's API token stops working (absent for console sessions). */
  token_expires_at: Type.Optional(Time),
});
export type Me = Static<typeof Me>;

/** A workspace (GET/POST …/workspaces). */
export const Workspace = open({ id: Type.String(), name: Type.String(), created_at: Time });
export type Workspace = Static<typeof Workspace>;
export const WorkspaceList = open({ workspaces: Type.Array(Workspace) });

/** A customer or escrow audit-encryption key (…/audit-encryption-keys). */
export const AuditKey = open({
  id: Type.String(),
  name: Type.String(),
  public_key: Type.String(),
  /** The spec's two statuses. The escrow key is active while records are encrypted to it, disabled (with the reason) while not. */
  status: Type.Union([Type.Literal("active"), Type.Literal("disabled")]),
  created_at: Type.String(),
  disabled_at: Nullable(Type.String()),
  /** Why the service disabled a customer key itself, or why the escrow key receives no records now (and what brings it back). */
  disabled_reason: Nullable(Type.String()),
  kind: Type.Union([Type.Literal("customer"), Type.Literal("escrow")]),
});
export type AuditKey = Static<typeof AuditKey>;
export const AuditKeyList = open({ keys: Type.Array(AuditKey) });

/**
 * An audit digest key (…/audit-digest-keys): its id and times, never its material. The newest is
 * `current` (new digest-only records are made with it); older ones are `retired` when the next
 * was made, and kept so their records still name them and group among themselves.
 */
export const DigestKey = open({
  id: Type.String(),
  status: Type.Union([Type.Literal("current"), Type.Literal("retired")]),
  created_at: Time,
  retired_at: Nullable(Time),
});
export type DigestKey = Static<typeof DigestKey>;
export const DigestKeyList = open({ keys: Type.Array(DigestKey) });
export type DigestKeyList = Static<typeof DigestKeyList>;
/** POST …/audit-digest-keys (rotate): the new current key and the one it retired. */
export const DigestKeyRotation = open({ key: DigestKey, retired: DigestKey });
export type DigestKeyRotation = Static<typeof DigestKeyRotation>;

/** A runtime installation (…/installations). */
export const Installation = open({
  id: Type.String(),
  name: Type.String(),
  platform: Type.String(),
  agent_id: Type.String(),
  workspace_id: Type.String(),
  has_credential: Type.Boolean(),
  credential_issued_at: Nullable(Time),
  tool_count: Type.Integer(),
  created_at: Time,
});
export type Installation = Static<typeof Installation>;
export const InstallationList = open({ installations: Type.Array(Installation) });

/**
 * A replica of an installation as its heartbeats last reported it. `state` is what it reported,
 * unless it has not been heard from for a while: then `stale` or `gone` (`liveness`).
 */
export const Replica = open({
  id: Type.String(),
  state: Nullable(Type.String()),
  reported_state: Nullable(Type.String()),
  liveness: Type.Union([Type.Literal("live"), Type.Literal("stale"), Type.Literal("gone")]),
  last_seen_at: Nullable(Time),
  policy_revision: Nullable(Type.Integer()),
  tool_count: Nullable(Type.Integer()),
  spool_depth: Nullable(Type.Integer()),
  /** ok, low or full (full: the replica refuses decisions, 503 spool_full); null before it reported one. */
  spool_state: Nullable(Type.String()),
  spool_free_bytes: Nullable(Type.Number()),
  /** At its last heartbeat the replica still indexed its spool's backlog after a start: spool_depth is what it had indexed so far. */
  spool_indexing: Type.Optional(Type.Boolean()),
  /** The replica's clock minus the control plane's at its last heartbeat, ms (positive: ahead). */
  clock_skew_ms: Nullable(Type.Integer()),
  /** The assigned MCP tool servers as its latest heartbeat reported them (issue 13). */
  tool_servers: Nullable(Type.Array(HeartbeatToolServer)),
  version: Nullable(Type.String()),
  hostname: Nullable(Type.String()),
  bootstrapped_at: Nullable(Time),
  last_heartbeat_at: Nullable(Time),
  last_success: Nullable(Type.String()),
});
export type Replica = Static<typeof Replica>;

/** GET …/installations/{id}: the installation with its replicas. */
export const InstallationStatus = Type.Composite([Installation, open({ replicas: Type.Array(Replica) })], { additionalProperties: true });
export type InstallationStatus = Static<typeof InstallationStatus>;
export { PolicyBundle } from "./bundle.ts";
