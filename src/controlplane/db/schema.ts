// The control plane's tables (SQLite dialect). Times are epoch milliseconds; JSON columns
// hold small lists. Each resource folder of src/controlplane/ owns its tables and is the
// only code that queries them; others call its service functions.
import { sql } from "drizzle-orm";
import { blob, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

const now = sql`(cast(unixepoch('subsec') * 1000 as integer))`;
const createdAt = () => integer("created_at").notNull().default(now);

// ── organizations, workspaces, accounts ────────────────────────────────────────────────

export const organizations = sqliteTable("organizations", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  /** Bumped by every change that can alter any of the org's policy bundles; the bundle ETag. */
  revision: integer("revision").notNull().default(1),
  escrowEnabled: integer("escrow_enabled", { mode: "boolean" }).notNull().default(false),
  createdAt: createdAt(),
});

/** The organization's audit digest key (HMAC-SHA-256), wrapped by the KMS. */
export const digestKeys = sqliteTable("digest_keys", {
  id: text("id").primaryKey(),
  orgId: text("org_id").notNull().references(() => organizations.id),
  wrapped: text("wrapped").notNull(),
  createdAt: createdAt(),
});

/** The service's escrow identity per organization: public recipient plus KMS-wrapped private key. */
export const escrowKeys = sqliteTable("escrow_keys", {
  id: text("id").primaryKey(),
  orgId: text("org_id").notNull().unique().references(() => organizations.id),
  recipient: text("recipient").notNull(),
  wrappedIdentity: text("wrapped_identity").notNull(),
  createdAt: createdAt(),
});

export const workspaces = sqliteTable(
  "workspaces",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => organizations.id),
    name: text("name").notNull(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("workspaces_org_name").on(t.orgId, t.name)],
);

/** A person who can sign in to the service (console, CLI login, claim links). */
export const accounts = sqliteTable("accounts", {
  id: text("id").primaryKey(),
  email: text("email").notNull().unique(),
  displayName: text("display_name"),
  passwordHash: text("password_hash"),
  createdAt: createdAt(),
});

export const memberships = sqliteTable(
  "memberships",
  {
    accountId: text("account_id").notNull().references(() => accounts.id),
    orgId: text("org_id").notNull().references(() => organizations.id),
    role: text("role", { enum: ["owner", "admin", "member"] }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.orgId] })],
);

/** Console sessions; the cookie holds the raw id, the table its SHA-256. */
export const sessions = sqliteTable("sessions", {
  idHash: text("id_hash").primaryKey(),
  accountId: text("account_id").notNull().references(() => accounts.id),
  orgId: text("org_id").notNull().references(() => organizations.id),
  csrfToken: text("csrf_token").notNull(),
  /**
   * How the session was authenticated: "password" (the account's own credential, may switch
   * among the account's organizations) or "sso" (the IdP of `org_id`; bound to that org).
   */
  authMethod: text("auth_method", { enum: ["password", "sso"] }).notNull().default("password"),
  expiresAt: integer("expires_at").notNull(),
  createdAt: createdAt(),
});

/** API tokens for the CLI, bound to one account in one organization; stored hashed. */
export const apiTokens = sqliteTable("api_tokens", {
  id: text("id").primaryKey(),
  accountId: text("account_id").notNull().references(() => accounts.id),
  orgId: text("org_id").notNull().references(() => organizations.id),
  name: text("name").notNull(),
  tokenHash: text("token_hash").notNull().unique(),
  lastUsedAt: integer("last_used_at"),
  expiresAt: integer("expires_at"),
  revokedAt: integer("revoked_at"),
  createdAt: createdAt(),
});

/** `svc login` browser approval: the CLI polls with its secret until an admin approves. */
export const loginRequests = sqliteTable("login_requests", {
  id: text("id").primaryKey(),
  userCode: text("user_code").notNull(),
  pollSecretHash: text("poll_secret_hash").notNull(),
  approvedByAccountId: text("approved_by_account_id"),
  orgId: text("org_id"),
  tokenId: text("token_id"),
  expiresAt: integer("expires_at").notNull(),
  completedAt: integer("completed_at"),
  /** The last token poll accepted: polls sooner than the advertised interval are refused, on every replica. */
  lastPolledAt: integer("last_polled_at"),
  createdAt: createdAt(),
});

/**
 * Abuse-limit counters (http/rate-limit.ts): one fixed window per (scope, key), shared by every
 * replica and kept across restarts. The key is a SHA-256 of the email or client IP, never the value.
 */
export const rateLimitWindows = sqliteTable(
  "rate_limit_windows",
  {
    scope: text("scope").notNull(),
    key: text("key").notNull(),
    windowStart: integer("window_start").notNull(),
    count: integer("count").notNull(),
  },
  (t) => [primaryKey({ columns: [t.scope, t.key] }), index("rate_limit_windows_start").on(t.scope, t.windowStart)],
);

/** Per-organization OpenID Connect single sign-on for the console. */
export const oidcConfigs = sqliteTable("oidc_configs", {
  orgId: text("org_id").primaryKey().references(() => organizations.id),
  issuer: text("issuer").notNull(),
  clientId: text("client_id").notNull(),
  wrappedClientSecret: text("wrapped_client_secret").notNull(),
  createdAt: createdAt(),
});

// ── agents, installations, runtime replicas, tools ─────────────────────────────────────

export const agents = sqliteTable("agents", {
  id: text("id").primaryKey(),
  orgId: text("org_id").notNull().references(() => organizations.id),
  workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
  name: text("name").notNull(),
  description: text("description"),
  createdAt: createdAt(),
});

export const installations = sqliteTable("installations", {
  id: text("id").primaryKey(),
  orgId: text("org_id").notNull().references(() => organizations.id),
  workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
  agentId: text("agent_id").notNull().references(() => agents.id),
  name: text("name").notNull(),
  platform: text("platform", { enum: ["chatui"] }).notNull(),
  /** SHA-256 of the current runtime token; null until `svc bot credential` issues one. */
  tokenHash: text("token_hash").unique(),
  tokenIssuedAt: integer("token_issued_at"),
  deletedAt: integer("deleted_at"),
  createdAt: createdAt(),
});

/** One running proxy of an installation (replicas share the token, not their state). */
export const runtimeReplicas = sqliteTable(
  "runtime_replicas",
  {
    id: text("id").primaryKey(),
    installationId: text("installation_id").notNull().references(() => installations.id),
    credentialSyncRecipient: text("credential_sync_recipient").notNull(),
    hostname: text("hostname"),
    version: text("version"),
    state: text("state"),
    policyRevision: integer("policy_revision"),
    toolCount: integer("tool_count"),
    spoolDepth: integer("spool_depth"),
    lastSuccess: text("last_success"),
    bootstrappedAt: integer("bootstrapped_at").notNull(),
    lastHeartbeatAt: integer("last_heartbeat_at"),
  },
  (t) => [index("runtime_replicas_installation").on(t.installationId)],
);

/** Governed tools registered in a workspace: by an installation's tool sync or by an admin (installation null). */
export const tools = sqliteTable(
  "tools",
  {
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
    name: text("name").notNull(),
    installationId: text("installation_id").references(() => installations.id),
    access: text("access", { enum: ["read", "write"] }).notNull(),
    requiredCapabilities: text("required_capabilities", { mode: "json" }).$type<string[]>().notNull(),
    toolkitId: text("toolkit_id"),
    updatedAt: integer("updated_at").notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.workspaceId, t.name] }), index("tools_installation").on(t.installationId)],
);

// ── model profiles ─────────────────────────────────────────────────────────────────────

export const modelProfiles = sqliteTable(
  "model_profiles",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => organizations.id),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
    displayName: text("display_name").notNull(),
    endpoint: text("endpoint").notNull(),
    authType: text("auth_type", { enum: ["none", "api_key"] }).notNull(),
    defaultModel: text("default_model").notNull(),
    models: text("models", { mode: "json" }).$type<string[]>().notNull(),
    /** base64 age ciphertext of the API key, sealed to the replicas listed in sealedTo. Never plaintext. */
    apiKeySealed: text("api_key_sealed"),
    sealedTo: text("sealed_to", { mode: "json" }).$type<string[]>().notNull().default(sql`'[]'`),
    /** The credential-sync recipients (age1…) of those replicas when the key was stored: what readiness compares. */
    sealedRecipients: text("sealed_recipients", { mode: "json" }).$type<string[]>().notNull().default(sql`'[]'`),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("model_profiles_ws_name").on(t.workspaceId, t.displayName)],
);

export const modelProfileAssignments = sqliteTable("model_profile_assignments", {
  agentId: text("agent_id").primaryKey().references(() => agents.id),
  profileId: text("profile_id").notNull().references(() => modelProfiles.id),
  assignedAt: integer("assigned_at").notNull(),
});

// ── policies ───────────────────────────────────────────────────────────────────────────

export const policies = sqliteTable(
  "policies",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => organizations.id),
    workspaceId: text("workspace_id").notNull().references(() => workspaces.id),
    /** null: applies to every agent of the workspace. */
    agentId: text("agent_id").references(() => agents.id),
    name: text("name").notNull(),
    src: text("src").notNull(),
    dst: text("dst").notNull(),
    effect: text("effect", { enum: ["permit", "deny"] }).notNull(),
    /** A CEL expression over args, user and now (src/conditions/); null: the policy always applies. */
    condition: text("condition"),
    /** shadow: evaluated and recorded on the audit record, never changes the outcome. */
    mode: text("mode", { enum: ["enforce", "shadow"] }).notNull().default("enforce"),
    createdAt: createdAt(),
  },
  (t) => [index("policies_ws_agent").on(t.workspaceId, t.agentId)],
);

// ── users, groups, remote identities, claim links ─────────────────────────────────────

/** Service users: the identities decisions are made and audited under; keyed by email per org. */
export const users = sqliteTable(
  "users",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => organizations.id),
    email: text("email").notNull(),
    displayName: text("display_name"),
    disabled: integer("disabled", { mode: "boolean" }).notNull().default(false),
    source: text("source", { enum: ["manual", "directory", "claim"] }).notNull(),
    externalId: text("external_id"),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("users_org_email").on(t.orgId, t.email)],
);

export const groups = sqliteTable(
  "groups",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => organizations.id),
    name: text("name").notNull(),
    source: text("source", { enum: ["manual", "directory"] }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("groups_org_name").on(t.orgId, t.name)],
);

export const groupMembers = sqliteTable(
  "group_members",
  {
    groupId: text("group_id").notNull().references(() => groups.id),
    userId: text("user_id").notNull().references(() => users.id),
    source: text("source", { enum: ["manual", "directory"] }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.groupId, t.userId] }), index("group_members_user").on(t.userId)],
);

/** A front-end user (`chatui`, front-end user id), linked or not to a service user. */
export const remoteIdentities = sqliteTable(
  "remote_identities",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => organizations.id),
    platform: text("platform", { enum: ["chatui"] }).notNull(),
    remoteUserId: text("remote_user_id").notNull(),
    installationId: text("installation_id").references(() => installations.id),
    email: text("email"),
    displayName: text("display_name"),
    userId: text("user_id").references(() => users.id),
    linkedAt: integer("linked_at"),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("remote_identities_key").on(t.orgId, t.platform, t.remoteUserId), index("remote_identities_user").on(t.userId)],
);

export const claimLinks = sqliteTable("claim_links", {
  id: text("id").primaryKey(),
  orgId: text("org_id").notNull().references(() => organizations.id),
  installationId: text("installation_id").notNull().references(() => installations.id),
  remoteUserId: text("remote_user_id").notNull(),
  tokenHash: text("token_hash").notNull().unique(),
  expiresAt: integer("expires_at").notNull(),
  usedAt: integer("used_at"),
  usedByUserId: text("used_by_user_id"),
  createdAt: createdAt(),
});

// ── audit encryption keys, audit records ───────────────────────────────────────────────

export const auditKeys = sqliteTable("audit_keys", {
  id: text("id").primaryKey(),
  orgId: text("org_id").notNull().references(() => organizations.id),
  name: text("name").notNull(),
  publicKey: text("public_key").notNull(),
  status: text("status", { enum: ["active", "disabled"] }).notNull(),
  disabledAt: integer("disabled_at"),
  createdAt: createdAt(),
});

export const auditRecords = sqliteTable(
  "audit_records",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull(),
    workspaceId: text("workspace_id").notNull(),
    installationId: text("installation_id").notNull(),
    agentId: text("agent_id").notNull(),
    replicaId: text("replica_id"),
    ts: integer("ts").notNull(),
    kind: text("kind", { enum: ["tool", "model", "outcome"] }).notNull(),
    harness: text("harness").notNull(),
    action: text("action").notNull(),
    toolName: text("tool_name"),
    model: text("model"),
    decision: text("decision", { enum: ["permit", "deny", "ask"] }).notNull(),
    reason: text("reason").notNull(),
    policyId: text("policy_id"),
    policyRevision: integer("policy_revision").notNull(),
    userId: text("user_id"),
    remoteUserId: text("remote_user_id"),
    viaInstallation: integer("via_installation", { mode: "boolean" }).notNull(),
    ref: text("ref"),
    outcome: text("outcome"),
    exitCode: integer("exit_code"),
    argsDigest: text("args_digest"),
    digestKeyId: text("digest_key_id"),
    recipientKeyIds: text("recipient_key_ids", { mode: "json" }).$type<string[]>().notNull(),
    /** The age ciphertext, opaque to the service: stored, never decrypted. */
    ciphertext: blob("ciphertext", { mode: "buffer" }),
    receivedAt: integer("received_at").notNull(),
  },
  (t) => [
    index("audit_org_tool_decision_id").on(t.orgId, t.toolName, t.decision, t.id),
    index("audit_org_id").on(t.orgId, t.id),
    index("audit_org_user_id").on(t.orgId, t.userId, t.id),
    index("audit_org_installation_id").on(t.orgId, t.installationId, t.id),
    index("audit_ref").on(t.ref),
  ],
);

// ── directory sync ─────────────────────────────────────────────────────────────────────

export const directorySyncConfigs = sqliteTable("directory_sync_configs", {
  orgId: text("org_id").primaryKey().references(() => organizations.id),
  tenantId: text("tenant_id").notNull(),
  clientId: text("client_id").notNull(),
  appId: text("app_id").notNull(),
  wrappedClientSecret: text("wrapped_client_secret").notNull(),
  dryRun: integer("dry_run", { mode: "boolean" }).notNull(),
  createUsers: integer("create_users", { mode: "boolean" }).notNull(),
  authorityUrl: text("authority_url").notNull(),
  graphUrl: text("graph_url").notNull(),
  intervalSeconds: integer("interval_seconds").notNull(),
  enabled: integer("enabled", { mode: "boolean" }).notNull().default(false),
  updatedAt: integer("updated_at").notNull(),
});

export const directorySyncRuns = sqliteTable(
  "directory_sync_runs",
  {
    id: text("id").primaryKey(),
    orgId: text("org_id").notNull().references(() => organizations.id),
    startedAt: integer("started_at").notNull(),
    finishedAt: integer("finished_at"),
    dryRun: integer("dry_run", { mode: "boolean" }).notNull(),
    status: text("status", { enum: ["running", "succeeded", "failed"] }).notNull(),
    counts: text("counts", { mode: "json" }).$type<Record<string, number>>().notNull(),
    changes: text("changes", { mode: "json" }).$type<unknown[]>().notNull(),
    errors: text("errors", { mode: "json" }).$type<string[]>().notNull(),
  },
  (t) => [index("directory_sync_runs_org").on(t.orgId, t.startedAt)],
);
