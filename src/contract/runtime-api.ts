// Bodies of the runtime API (ARCHITECTURE.md "Runtime ↔ control plane"), all under
// {base_url}/api/v1/runtime/ with `Authorization: Bearer <SVC_RUNTIME_TOKEN>`.
// Several replicas of one installation share the token; each names itself with a
// replica id it generates once and keeps in its state directory.
import { type Static, Type } from "@sinclair/typebox";
import { AuditRecord } from "./audit.ts";
import { Problem } from "./errors.ts";

export const RUNTIME_API_PREFIX = "/api/v1/runtime";
/** The policy bundle every proxy replica polls (contract/bundle.ts), and `svc boot sync` reads without a proxy. */
export const POLICY_BUNDLE_PATH = `${RUNTIME_API_PREFIX}/policy-bundle`;
/** Header naming the replica on every runtime call after bootstrap. */
export const REPLICA_HEADER = "x-svc-replica";

export const BootstrapRequest = Type.Object(
  {
    replica_id: Type.String({ pattern: "^rep_[0-9A-Z]{26}$" }),
    /** The replica's credential-sync age X25519 recipient (age1…); model-profile API keys are sealed to it. */
    credential_sync_recipient: Type.String({ minLength: 10, maxLength: 200 }),
    version: Type.String({ maxLength: 100 }),
    hostname: Type.Optional(Type.String({ maxLength: 255 })),
  },
  { additionalProperties: false },
);
export type BootstrapRequest = Static<typeof BootstrapRequest>;

/** The organization's current audit digest key (HMAC-SHA-256): its id and its material, base64. */
export const DigestKeyMaterial = Type.Object({ id: Type.String(), key: Type.String() });
export type DigestKeyMaterial = Static<typeof DigestKeyMaterial>;
// GET /api/v1/runtime/digest-key: the current key, fetched again when the bundle names another (docs/digest-key.md).
// GET /api/v1/runtime/assertion-key: the organization's identity-assertion signing key, sealed to the calling replica (identity-assertion.ts).

export const BootstrapResponse = Type.Object({
  installation: Type.Object({ id: Type.String(), name: Type.String(), platform: Type.Literal("chatui") }),
  organization_id: Type.String(),
  workspace_id: Type.String(),
  agent_id: Type.String(),
  /** The organization's current audit digest key (HMAC-SHA-256), base64. */
  digest_key: DigestKeyMaterial,
  poll_interval_seconds: Type.Integer(),
  heartbeat_interval_seconds: Type.Integer(),
});
export type BootstrapResponse = Static<typeof BootstrapResponse>;

export const ProxyState = Type.Union([Type.Literal("starting"), Type.Literal("ready"), Type.Literal("stale"), Type.Literal("unavailable")]);
export type ProxyState = Static<typeof ProxyState>;

/** Counters fit the store's 32-bit integer columns (a larger value was a 500 on PostgreSQL). */
const Count = Type.Integer({ minimum: 0, maximum: 2_147_483_647 });

/** One assigned MCP tool server in a heartbeat: reached at its last listing (with its tool count) or not (with why). */
export const HeartbeatToolServer = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 64 }),
    state: Type.Union([Type.Literal("ok"), Type.Literal("unreachable")]),
    error: Type.Union([Type.String({ maxLength: 1000 }), Type.Null()]),
    tool_count: Type.Integer({ minimum: 0, maximum: 100000 }),
  },
  { additionalProperties: false },
);
export type HeartbeatToolServer = Static<typeof HeartbeatToolServer>;

/** This replica's last attempt to reach a model profile's endpoint (issue 19): ok, or why not (TLS, DNS, refused …). */
export const HeartbeatModelEndpoint = Type.Object(
  {
    profile_id: Type.String({ minLength: 1, maxLength: 64 }),
    state: Type.Union([Type.Literal("ok"), Type.Literal("unreachable")]),
    error: Type.Union([Type.String({ maxLength: 1000 }), Type.Null()]),
    at: Type.String({ maxLength: 40 }),
  },
  { additionalProperties: false },
);
export type HeartbeatModelEndpoint = Static<typeof HeartbeatModelEndpoint>;

export const HeartbeatRequest = Type.Object(
  {
    replica_id: Type.String({ pattern: "^rep_[0-9A-Z]{26}$" }),
    state: ProxyState,
    policy_revision: Type.Union([Count, Type.Null()]),
    tool_count: Count,
    version: Type.String({ maxLength: 100 }),
    /** Unacknowledged audit records; while `spool_indexing`, those indexed so far (a lower bound). */
    spool_depth: Count,
    /** The replica still indexes the backlog of earlier runs after a start: `spool_depth` may grow as it does. */
    spool_indexing: Type.Optional(Type.Boolean()),
    last_success: Type.Union([Type.String({ maxLength: 64 }), Type.Null()]),
    /** The audit spool's space: `full` means the replica refuses decisions (503 spool_full). */
    spool_state: Type.Optional(Type.Union([Type.Literal("ok"), Type.Literal("low"), Type.Literal("full")])),
    /** Free bytes on the spool's filesystem (capped at 2^53); null when unknown. */
    spool_free_bytes: Type.Optional(Type.Union([Type.Integer({ minimum: 0 }), Type.Null()])),
    /** The runtime's clock when it sent this heartbeat: the control plane measures the clock skew from it. */
    sent_at: Type.Optional(Type.String({ format: "date-time", maxLength: 40 })),
    /** The assigned MCP tool servers as this replica sees them (issue 13): an unreachable one serves no tools. */
    tool_servers: Type.Optional(Type.Array(HeartbeatToolServer, { maxItems: 200 })),
    /** The last attempt to reach each model profile's endpoint since the replica started (issue 19). */
    model_endpoints: Type.Optional(Type.Array(HeartbeatModelEndpoint, { maxItems: 200 })),
  },
  { additionalProperties: false },
);
export type HeartbeatRequest = Static<typeof HeartbeatRequest>;

/**
 * Who holds a tool name that PUT tools wanted: another live installation of the workspace,
 * or an admin (a tool registered with no installation).
 */
export const ToolConflictHolder = Type.Union([
  Type.Object({ installation_id: Type.String({ minLength: 1 }), installation_name: Type.Union([Type.String(), Type.Null()]) }, { additionalProperties: false }),
  Type.Object({ admin: Type.Literal(true) }, { additionalProperties: false }),
]);
export type ToolConflictHolder = Static<typeof ToolConflictHolder>;

/** The members a 409 tool_conflict adds to the problem (SvcError's `extra`). */
export const ToolConflictMembers = Type.Object({ tool: Type.String({ minLength: 1 }), holder: ToolConflictHolder });
export type ToolConflictMembers = Static<typeof ToolConflictMembers>;

/**
 * The body of PUT tools' 409: problem+json with code tool_conflict, naming the first
 * conflicting tool and its holder. The control plane builds it; the boot tool sync checks a
 * 409 against it before naming tool and holder (else it says only what the status means).
 */
export const ToolConflictProblem = Type.Object(
  {
    ...Problem.properties,
    status: Type.Literal(409),
    code: Type.Literal("tool_conflict"),
    ...ToolConflictMembers.properties,
  },
  { additionalProperties: true },
);
export type ToolConflictProblem = Static<typeof ToolConflictProblem>;

export const RecipientsResponse = Type.Object({
  recipients: Type.Array(
    Type.Object({
      key_id: Type.String(),
      recipient: Type.String(),
      kind: Type.Union([Type.Literal("customer"), Type.Literal("escrow")]),
    }),
  ),
});
export type RecipientsResponse = Static<typeof RecipientsResponse>;

export const AuditBatchRequest = Type.Object({ records: Type.Array(AuditRecord, { minItems: 1, maxItems: 5000 }) }, { additionalProperties: false });
export type AuditBatchRequest = Static<typeof AuditBatchRequest>;

/**
 * Why the control plane refused one record of a batch. Two are retryable, and the shipper keeps
 * such a record and sends it again later: `clock_skew` (dated ahead of the control plane's
 * clock; accepted once that clock catches up) and `unsupported_field` (it carries a field this
 * control plane does not know, from a newer proxy: accepted once the control plane is upgraded,
 * instead of being stored without the field, issue 29). The others are set aside for good.
 */
export const AuditRejectionCode = Type.Union([
  Type.Literal("malformed"),
  Type.Literal("not_this_installation"),
  Type.Literal("id_taken"),
  Type.Literal("too_old"),
  Type.Literal("clock_skew"),
  Type.Literal("unsupported_field"),
]);
export type AuditRejectionCode = Static<typeof AuditRejectionCode>;
export const RETRYABLE_REJECTIONS: readonly AuditRejectionCode[] = ["clock_skew", "unsupported_field"];

export const AuditBatchResponse = Type.Object({
  /** These ids are now stored (new or already present): the shipper may drop them. */
  acknowledged: Type.Array(Type.String()),
  inserted: Type.Integer(),
  duplicates: Type.Integer(),
  /**
   * Records refused (malformed, not the caller's, an id already taken by another
   * installation's record, out of the time window), each with a `code`: not stored. The shipper
   * sets them aside, except `clock_skew` ones, which it sends again later. The rest of the batch
   * is stored regardless.
   */
  rejected: Type.Optional(Type.Array(Type.Object({ id: Type.String(), reason: Type.String(), code: Type.Optional(AuditRejectionCode) }))),
});
export type AuditBatchResponse = Static<typeof AuditBatchResponse>;

export const ClaimRequest = Type.Object(
  {
    remote_user_id: Type.String({ minLength: 1, maxLength: 200 }),
    email: Type.Optional(Type.String({ maxLength: 320 })),
    name: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
);
export type ClaimRequest = Static<typeof ClaimRequest>;

export const ClaimResponse = Type.Object({
  url: Type.String(),
  expires_at: Type.String({ format: "date-time" }),
});
export type ClaimResponse = Static<typeof ClaimResponse>;

/**
 * POST /api/v1/runtime/tool-server-token (issue 32): an access token for an OAuth tool server,
 * for one front-end user (or, without one, the server's listing grant, for tools/list only),
 * sealed to the asking replica's credential-sync key. `stale`: the server refused the token
 * the runtime held, so refresh it. No grant: the consent link for that user instead.
 */
export const ToolServerTokenRequest = Type.Object(
  {
    server: Type.String({ minLength: 1, maxLength: 64 }),
    remote_user_id: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    stale: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type ToolServerTokenRequest = Static<typeof ToolServerTokenRequest>;

export const ToolServerTokenResponse = Type.Union([
  Type.Object({
    access_token_sealed: Type.String({ description: "base64 age ciphertext of the access token, to this replica's credential-sync key" }),
    expires_at: Type.String({ format: "date-time", description: "keep it no longer (at most 5 minutes from now)" }),
    subject: Type.Union([Type.String(), Type.Null()], { description: "who the token speaks for at the server (audited)" }),
  }),
  Type.Object({
    consent_required: Type.Literal(true),
    consent_url: Type.Union([Type.String(), Type.Null()], { description: "the one-time link for that user alone; null for the listing grant (an admin connects it)" }),
    expires_at: Type.Union([Type.String({ format: "date-time" }), Type.Null()]),
  }),
]);
export type ToolServerTokenResponse = Static<typeof ToolServerTokenResponse>;

/**
 * GET /api/v1/runtime/limits (issue 16): the budgets that apply to this installation's agent
 * and to its linked users (theirs and their groups'), each with what has been spent in the
 * current period across every installation, as ingested so far. The proxy polls it.
 */
export const BudgetState = Type.Object({
  id: Type.String(),
  name: Type.String(),
  scope: Type.Union([Type.Literal("user"), Type.Literal("group"), Type.Literal("agent")]),
  /** usr_…, grp_… or agt_… */
  scope_id: Type.String(),
  /** For a group budget: the group's name, as the bundle's identities list it. */
  group_name: Type.Union([Type.String(), Type.Null()]),
  period: Type.Union([Type.Literal("day"), Type.Literal("month")]),
  unit: Type.Union([Type.Literal("tokens"), Type.Literal("money")]),
  limit: Type.Number({ minimum: 0 }),
  /** Tokens (prompt + completion) or money spent since period_start. */
  spent: Type.Number({ minimum: 0 }),
  period_start: Type.String({ format: "date-time" }),
  resets_at: Type.String({ format: "date-time" }),
});
export type BudgetState = Static<typeof BudgetState>;

export const LimitsResponse = Type.Object({
  budgets: Type.Array(BudgetState),
  /** When the counts were taken (the control plane's clock). */
  as_of: Type.String({ format: "date-time" }),
});
export type LimitsResponse = Static<typeof LimitsResponse>;

// POST /api/v1/runtime/budget-leases: what a proxy reserves of its callers' budgets before forwarding (budget leases).

/**
 * POST /api/v1/runtime/budget-leases: a proxy replica settles the leases it is done with
 * (what their calls consumed) and asks for a lease on each budget it needs, in one call. A
 * lease reserves a share of what remains of a budget in its period for this replica alone:
 * the replica spends it on its calls and settles it after them (docs/proxy.md "Budgets").
 */
export const BudgetLeaseRequest = Type.Object(
  {
    settle: Type.Array(
      Type.Object(
        {
          lease_id: Type.String({ pattern: "^bls_[0-9A-Z]{26}$" }),
          /** Tokens or money the calls charged to this lease consumed, in the budget's unit. */
          consumed: Type.Number({ minimum: 0, maximum: 1e15 }),
        },
        { additionalProperties: false },
      ),
      { maxItems: 200 },
    ),
    /** What the calls of leases still held (calls in flight on them) consumed so far: counted at once, the lease stays open. */
    report: Type.Optional(
      Type.Array(Type.Object({ lease_id: Type.String({ pattern: "^bls_[0-9A-Z]{26}$" }), consumed: Type.Number({ minimum: 0, maximum: 1e15 }) }, { additionalProperties: false }), { maxItems: 400 }),
    ),
    want: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: 200 }),
    /** Per wanted budget: what the calls waiting for the lease are expected to consume (a lease is at least that, when that much remains). */
    need: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Type.Number({ minimum: 0, maximum: 1e15 }))),
  },
  { additionalProperties: false },
);
export type BudgetLeaseRequest = Static<typeof BudgetLeaseRequest>;

export const BudgetLease = Type.Object({
  budget_id: Type.String(),
  /** null when nothing remains (granted 0): the budget is used up, the call refused. */
  lease_id: Type.Union([Type.String(), Type.Null()]),
  granted: Type.Number({ minimum: 0 }),
  expires_at: Type.String({ format: "date-time" }),
  /** What the control plane counts as spent in the period before this grant (leases held included), and the limit. */
  spent: Type.Number({ minimum: 0 }),
  limit: Type.Number({ minimum: 0 }),
  period_start: Type.String({ format: "date-time" }),
  resets_at: Type.String({ format: "date-time" }),
});
export type BudgetLease = Static<typeof BudgetLease>;

export const BudgetLeaseResponse = Type.Object({
  /** One per wanted budget that exists; a budget deleted meanwhile is left out (nothing to enforce). */
  leases: Type.Array(BudgetLease),
  /** The control plane's clock when it answered: the proxy reads `expires_at` against it, not its own clock. */
  as_of: Type.String({ format: "date-time" }),
});
export type BudgetLeaseResponse = Static<typeof BudgetLeaseResponse>;

// PUT /api/v1/runtime/mcp-tools: the tools an installation's replica listed from the MCP servers assigned to its agent (issue 31).

/** One tool a server listed, as svc governs it (contract/mcp-names.ts maps the name). */
export const McpListedTool = Type.Object(
  {
    /** The governed name, `<server>.<method>`. */
    name: Type.String({ minLength: 3, maxLength: 200, pattern: "^[A-Za-z][A-Za-z0-9_-]*\\.[A-Za-z0-9_-]+$" }),
    /** The name at the server, as it lists it. */
    upstream: Type.String({ minLength: 1, maxLength: 512 }),
    access: Type.Union([Type.Literal("read"), Type.Literal("write")]),
  },
  { additionalProperties: false },
);
export type McpListedTool = Static<typeof McpListedTool>;

/** A tool a server listed that svc does not serve, and why (shown by readiness and the console). */
export const McpSkippedTool = Type.Object({ tool: Type.String({ maxLength: 512 }), why: Type.String({ maxLength: 500 }) }, { additionalProperties: false });
export type McpSkippedTool = Static<typeof McpSkippedTool>;

/**
 * PUT /api/v1/runtime/mcp-tools: what one listing of each server found, for the servers this
 * replica listed successfully since its last report (an unreachable server is not reported:
 * its tools stay registered, and calls to them end as "unreachable", never as unregistered).
 * MCP tools belong to the agent: the bundle of every installation of the agent carries the
 * union of what its installations listed, so no installation conflicts with another.
 */
export const McpToolsReport = Type.Object(
  {
    servers: Type.Array(
      Type.Object(
        {
          server: Type.String({ minLength: 1, maxLength: 64 }),
          tools: Type.Array(McpListedTool, { maxItems: 5000 }),
          skipped: Type.Array(McpSkippedTool, { maxItems: 5000 }),
        },
        { additionalProperties: false },
      ),
      { maxItems: 200 },
    ),
  },
  { additionalProperties: false },
);
export type McpToolsReport = Static<typeof McpToolsReport>;

/** Whether the report changed what the agent's bundles carry (the revision was bumped: poll now). */
export const McpToolsResult = Type.Object({ changed: Type.Boolean(), unknown_servers: Type.Array(Type.String()) });
export type McpToolsResult = Static<typeof McpToolsResult>;
