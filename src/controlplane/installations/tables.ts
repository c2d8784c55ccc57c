// The tables of installations: each installation and its running proxies (runtime replicas).
// Declared once for both stores (db/table.ts, db/README.md).
import type { HeartbeatModelEndpoint, HeartbeatToolServer } from "../../contract/runtime-api.ts";
import { table } from "../db/table.ts";
import { agents } from "../agents/tables.ts";
import { organizations, workspaces } from "../organizations/tables.ts";

export const installations = table("installations", (c) => ({
  id: c.text("id").primaryKey(),
  orgId: c
    .text("org_id")
    .notNull()
    .references(() => organizations.id),
  workspaceId: c
    .text("workspace_id")
    .notNull()
    .references(() => workspaces.id),
  agentId: c
    .text("agent_id")
    .notNull()
    .references(() => agents.id),
  name: c.text("name").notNull(),
  platform: c.text("platform", { enum: ["chatui"] }).notNull(),
  /** SHA-256 of the current runtime token; null until `svc bot credential` issues one. */
  tokenHash: c.text("token_hash").unique(),
  tokenIssuedAt: c.millis("token_issued_at"),
  deletedAt: c.millis("deleted_at"),
  createdAt: c.createdAt(),
}));

/** One running proxy of an installation (replicas share the token, not their state). */
export const runtimeReplicas = table(
  "runtime_replicas",
  (c) => ({
    id: c.text("id").primaryKey(),
    installationId: c
      .text("installation_id")
      .notNull()
      .references(() => installations.id),
    credentialSyncRecipient: c.text("credential_sync_recipient").notNull(),
    hostname: c.text("hostname"),
    version: c.text("version"),
    state: c.text("state"),
    policyRevision: c.integer("policy_revision"),
    toolCount: c.integer("tool_count"),
    spoolDepth: c.integer("spool_depth"),
    /** The replica's audit spool space: ok, low, full (full: it refuses decisions). */
    spoolState: c.text("spool_state"),
    /** Free bytes on the spool's filesystem (a double: beyond 32 bits, exact to 2^53). */
    spoolFreeBytes: c.double("spool_free_bytes"),
    /** The replica still indexed its spool's backlog at its last heartbeat: spool_depth counts only what it had indexed. */
    spoolIndexing: c.bool("spool_indexing"),
    /** The replica's clock minus the control plane's at its last heartbeat (positive: ahead). */
    clockSkewMs: c.integer("clock_skew_ms"),
    lastSuccess: c.text("last_success"),
    bootstrappedAt: c.millis("bootstrapped_at").notNull(),
    lastHeartbeatAt: c.millis("last_heartbeat_at"),
    /** The assigned MCP servers as the latest heartbeat reported them; null when it reported none (issue 13). */
    toolServers: c.json<HeartbeatToolServer[]>("tool_servers"),
    /** The last attempt to reach each model profile's endpoint, as the latest heartbeat reported it (issue 19). */
    modelEndpoints: c.json<HeartbeatModelEndpoint[]>("model_endpoints"),
  }),
  (t, c) => [c.index("runtime_replicas_installation").on(t.installationId)],
);
