// The tables of audit: audit records (with the usage of model calls). Declared once for both stores (db/table.ts, db/README.md).
import { isNotNull, isNull, sql } from "drizzle-orm";
import { table } from "../db/table.ts";

export const auditRecords = table(
  "audit_records",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c.text("org_id").notNull(),
    workspaceId: c.text("workspace_id").notNull(),
    installationId: c.text("installation_id").notNull(),
    agentId: c.text("agent_id").notNull(),
    replicaId: c.text("replica_id"),
    ts: c.millis("ts").notNull(),
    /** "admin": an event the control plane writes itself (escrow recovery), never a runtime's. */
    kind: c.text("kind", { enum: ["tool", "model", "outcome", "admin"] }).notNull(),
    harness: c.text("harness").notNull(),
    action: c.text("action").notNull(),
    toolName: c.text("tool_name"),
    /** For a tool of an MCP server (issue 13): the server's name, the prefix of tool_name (record-check.ts). */
    toolServer: c.text("tool_server"),
    /** Who a call was made as at an MCP server (issue 32): canonical JSON of `upstream_identity` (contract/audit.ts `upstreamIdentityText`), never a token. */
    upstreamIdentity: c.text("upstream_identity"),
    model: c.text("model"),
    /** Open WebUI's background task a model call was made for (title_generation, …); null for a user's turn. */
    task: c.text("task"),
    decision: c.text("decision", { enum: ["permit", "deny", "ask"] }).notNull(),
    reason: c.text("reason").notNull(),
    policyId: c.text("policy_id"),
    policyRevision: c.integer("policy_revision").notNull(),
    /** What shadow policies would have decided (issue 17); null when none applied. */
    shadowDecision: c.text("shadow_decision", { enum: ["permit", "deny"] }),
    shadowPolicyId: c.text("shadow_policy_id"),
    shadowReason: c.text("shadow_reason"),
    userId: c.text("user_id"),
    remoteUserId: c.text("remote_user_id"),
    viaInstallation: c.bool("via_installation").notNull(),
    ref: c.text("ref"),
    outcome: c.text("outcome"),
    exitCode: c.integer("exit_code"),
    argsDigest: c.text("args_digest"),
    digestKeyId: c.text("digest_key_id"),
    recipientKeyIds: c.json<string[]>("recipient_key_ids").notNull(),
    /** The age ciphertext, opaque to the service: stored, never decrypted. */
    ciphertext: c.bytes("ciphertext"),
    /** Usage of a model call, on its outcome record (issue 16). */
    promptTokens: c.integer("prompt_tokens"),
    completionTokens: c.integer("completion_tokens"),
    cost: c.double("cost"),
    durationMs: c.integer("duration_ms"),
    /** The proxy's hash chain (issue 15, contract/audit-chain.ts); null on records written before chaining. */
    chainId: c.text("chain_id"),
    chainSeq: c.integer("chain_seq"),
    chainPrev: c.text("chain_prev"),
    receivedAt: c.millis("received_at").notNull(),
    /**
     * Admin events (kind "admin", issue 27, admin-events.ts): who acted (`acc_…`, `system:<name>`
     * or `anonymous`), what they acted on (`<type>:<id>`), and the event's whole account as
     * JSON text (contract/admin-event.ts AdminEventDetail: actor, target, before/after with
     * secrets only as digests, result, severity). Null on the runtimes' records.
     */
    actorId: c.text("actor_id"),
    target: c.text("target"),
    detail: c.text("detail"),
    /**
     * The row's link in its organization's store chain (contract/store-chain.ts): "store"
     * (runtime records), "admin" (admin events) or "adopted" (rows stored before the store
     * chains, linked by audit-chain/adoption.ts); set in the writing transaction, never after.
     */
    storeChain: c.text("store_chain"),
    storeSeq: c.integer("store_seq"),
    storePrev: c.text("store_prev"),
    /**
     * Whether the row is still outside the per-hour roll-ups (rollup-fold.ts): false for a row
     * this release stores (ingest counts it in the same transaction); true for one a replica of
     * an older release stored during a rolling upgrade on PostgreSQL (the column's default there,
     * set by hand in its migration, which an older release's INSERT does not name), until the
     * fold counts it; null for rows stored before the column existed (the roll-ups' fill
     * counted them). Budgets and usage add the pending rows to the roll-ups (usage.ts).
     */
    rollupPending: c.bool("rollup_pending"),
  }),
  // Partial indexes (WHERE …) hold only the rows their queries can find: many records have no
  // policy, most no shadow policy, and most are no model call's outcome; an index entry not
  // written is ingest time saved. A query uses one only when its WHERE implies the index's
  // (a literal, not a parameter, for `kind` and `action`): plans.test.ts checks each one.
  (t, c) => [
    // tool names in byte order (bounds.ts): a tool prefix is one range of it on both stores
    c.index("audit_org_tool_decision_id").on(t.orgId, c.bytewise(t.toolName), t.decision, t.id),
    c.index("audit_org_id").on(t.orgId, t.id),
    c.index("audit_org_user_id").on(t.orgId, t.userId, t.id),
    c.index("audit_org_installation_id").on(t.orgId, t.installationId, t.id),
    // calls with the same arguments: one digest within its key (svc audit list --args-digest; issue 27)
    c.index("audit_org_digest_id").on(t.orgId, t.argsDigest, t.id).where(isNotNull(t.argsDigest)),
    // a policy's recent decisions, enforced or shadow (console, issue 17)
    c.index("audit_org_policy_id").on(t.orgId, t.policyId, t.id).where(isNotNull(t.policyId)),
    c.index("audit_org_shadow_policy_id").on(t.orgId, t.shadowPolicyId, t.id).where(isNotNull(t.shadowPolicyId)),
    // usage sums over a time range (svc usage, budgets) read only model calls' outcomes (usage.ts)
    c.index("audit_org_model_outcome_ts").on(t.orgId, t.ts).where(sql`${t.kind} = 'outcome' and ${t.action} = 'model:invoke'`),
    // SIEM sinks read in ingest order after their cursor (sinks/deliver.ts)
    c.index("audit_org_received_id").on(t.orgId, t.receivedAt, t.id),
    // retention walks each chain up from its oldest record (audit/retention.ts)
    c.index("audit_org_chain_seq").on(t.orgId, t.chainId, t.chainSeq),
    // a call's outcome by its decision (the console's one row per call, issue 33): outcomes only
    c.index("audit_org_ref").on(t.orgId, t.ref).where(isNotNull(t.ref)),
    // the admin trail (svc audit list --kind admin [--actor …]; issue 27): few rows among many
    c.index("audit_org_admin_id").on(t.orgId, t.id).where(sql`${t.kind} = 'admin'`),
    c.index("audit_org_actor_id").on(t.orgId, t.actorId, t.id).where(isNotNull(t.actorId)),
    // the store chains in order: SIEM sinks read after their cursor, verify exports chain by
    // chain, adoption finds the rows not yet linked (store_chain IS NULL). Not unique: on
    // PostgreSQL a unique index would be built inside the migration's transaction, holding
    // writes to a large table (postgres-migrate.ts); numbers are given under the head's lock
    // (audit-chain/store-heads.ts), and verify names a number held twice.
    c.index("audit_org_store_chain_seq").on(t.orgId, t.storeChain, t.storeSeq),
    // the rows in no store chain, by id: the last part of an export in chain order. Without it
    // that page walked the organization's whole (org, id) index to find none (0.74 s at 1M
    // records, 3.75 s at 5M, every request waiting: issue 30). Usually empty, so ingest,
    // which links every row, never writes to it.
    c.index("audit_org_unchained_id").on(t.orgId, t.id).where(isNull(t.storeChain)),
    // the list's remaining filters (issue 30): a page of a rare kind or decision, of background
    // tasks or of changed shadow decisions reads its own rows newest first, never the walk of
    // every record of the organization (plans.test.ts shows each)
    c.index("audit_org_kind_id").on(t.orgId, t.kind, t.id),
    c.index("audit_org_decision_id").on(t.orgId, t.decision, t.id),
    c.index("audit_org_task_id").on(t.orgId, t.id).where(isNotNull(t.task)),
    c.index("audit_org_task_decision_id").on(t.orgId, t.decision, t.id).where(isNotNull(t.task)),
    c.index("audit_org_shadow_id").on(t.orgId, t.id).where(isNotNull(t.shadowDecision)),
    // rows outside the roll-ups (an older replica's, rollup-fold.ts): usually none
    c.index("audit_org_rollup_pending_ts").on(t.orgId, t.ts).where(sql`${t.rollupPending}`),
  ],
);

/**
 * Organizations whose audit_records held rows before the store chains existed (one row each,
 * written by the migration that added them): the adoption backfill (adoption.ts) links those
 * rows into the "adopted" chain and marks the organization complete. An organization with no
 * row here never had unlinked rows. Checkpoints sign the state, and it never goes back.
 */
export const auditAdoption = table("audit_adoption", (c) => ({
  orgId: c.text("org_id").primaryKey(),
  startedAt: c.millis("started_at").notNull(),
  /** rows adopted so far */
  adopted: c.integer("adopted").notNull().default(0),
  completedAt: c.millis("completed_at"),
}));

/**
 * Each organization's latest retention run (retention-runs.ts): an admin's, or an hourly one
 * that deleted something. `svc audit retention run` starts one in the background and `status`
 * reads it here, on any replica; `updated_at` moves with every batch, so a run whose process
 * died is seen as interrupted instead of running forever.
 */
export const auditRetentionRuns = table("audit_retention_runs", (c) => ({
  orgId: c.text("org_id").primaryKey(),
  id: c.text("id").notNull(),
  state: c.text("state", { enum: ["running", "done", "failed"] }).notNull(),
  /** who asked: an account id, or system:retention for the hourly run */
  actor: c.text("actor").notNull(),
  startedAt: c.millis("started_at").notNull(),
  updatedAt: c.millis("updated_at").notNull(),
  finishedAt: c.millis("finished_at"),
  retentionDays: c.integer("retention_days"),
  cutoff: c.millis("cutoff"),
  deleted: c.integer("deleted").notNull().default(0),
  chainsCut: c.integer("chains_cut").notNull().default(0),
  checkpoint: c.integer("checkpoint"),
  /** why a run failed */
  detail: c.text("detail"),
}));

/**
 * Per-hour roll-ups of the audit (issue 30, rollups.ts): kept by ingest in the transaction that
 * stores the records (a resent record is not new, so never counted twice) and by retention in the
 * one that deletes them, so they always equal the sums of the rows in audit_records. Keys that
 * may be null in a record are '' here (a unique key treats nulls as distinct). `hour` is the
 * epoch milliseconds at the top of the record's hour (its `ts`).
 *
 * Decisions: tool and model calls made for a person (no background task), as the console's
 * activity counts them.
 */
export const auditHourlyCalls = table(
  "audit_hourly_calls",
  (c) => ({
    orgId: c.text("org_id").notNull(),
    hour: c.millis("hour").notNull(),
    kind: c.text("kind", { enum: ["tool", "model"] }).notNull(),
    decision: c.text("decision", { enum: ["permit", "deny", "ask"] }).notNull(),
    toolName: c.text("tool_name").notNull(),
    userId: c.text("user_id").notNull(),
    calls: c.integer("calls").notNull(),
  }),
  (t, c) => [c.uniqueIndex("audit_hourly_calls_key").on(t.orgId, t.hour, t.kind, t.decision, t.toolName, t.userId)],
);

/**
 * Model usage: the outcome records of model calls (kind outcome, action model:invoke), as
 * usage.ts sums them. Token sums are doubles: exact integers to 2^53, where a 32-bit integer
 * could overflow in one busy hour.
 */
export const auditHourlyUsage = table(
  "audit_hourly_usage",
  (c) => ({
    orgId: c.text("org_id").notNull(),
    hour: c.millis("hour").notNull(),
    userId: c.text("user_id").notNull(),
    model: c.text("model").notNull(),
    agentId: c.text("agent_id").notNull(),
    replicaId: c.text("replica_id").notNull(),
    calls: c.integer("calls").notNull(),
    promptTokens: c.double("prompt_tokens").notNull(),
    completionTokens: c.double("completion_tokens").notNull(),
    cost: c.double("cost").notNull(),
  }),
  (t, c) => [c.uniqueIndex("audit_hourly_usage_key").on(t.orgId, t.hour, t.userId, t.model, t.agentId, t.replicaId)],
);
