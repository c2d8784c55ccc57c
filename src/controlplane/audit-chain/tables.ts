// The tables of tamper evidence (issue 15): where each proxy chain stands as ingested, the
// continuity problems seen at ingest, each organization's checkpoint-signing key (wrapped by
// the KMS) and the signed checkpoints. Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { organizations } from "../organizations/tables.ts";

/** The last record of each chain as the control plane received it (seq and hash, computed at ingest). */
export const auditChainHeads = table(
  "audit_chain_heads",
  (c) => ({
    /** `<org id>:<chain id>`: a chain id is only ever another organization's by forgery. */
    id: c.text("id").primaryKey(),
    orgId: c.text("org_id").notNull(),
    chainId: c.text("chain_id").notNull(),
    installationId: c.text("installation_id").notNull(),
    replicaId: c.text("replica_id"),
    seq: c.integer("seq").notNull(),
    hash: c.text("hash").notNull(),
    updatedAt: c.millis("updated_at").notNull(),
  }),
  (t, c) => [c.index("audit_chain_heads_org").on(t.orgId, t.chainId)],
);

/** A gap, fork or late record seen at ingest. */
export const auditChainFlags = table(
  "audit_chain_flags",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c.text("org_id").notNull(),
    chainId: c.text("chain_id").notNull(),
    installationId: c.text("installation_id").notNull(),
    kind: c.text("kind", { enum: ["gap", "fork", "late"] }).notNull(),
    /** The record that showed the problem, and its sequence number. */
    recordId: c.text("record_id").notNull(),
    seq: c.integer("seq").notNull(),
    detail: c.text("detail").notNull(),
    at: c.millis("at").notNull(),
  }),
  (t, c) => [c.index("audit_chain_flags_org_id").on(t.orgId, t.id)],
);

/** Each organization's Ed25519 checkpoint-signing key; the private half only KMS-wrapped. */
export const auditSigningKeys = table("audit_signing_keys", (c) => ({
  orgId: c
    .text("org_id")
    .primaryKey()
    .references(() => organizations.id),
  /** `ed25519:` + base64 of the 32-byte public key */
  publicKey: c.text("public_key").notNull(),
  /** PKCS#8 DER of the private key, wrapped by the KMS (context names the organization). */
  wrappedPrivateKey: c.text("wrapped_private_key").notNull(),
  createdAt: c.createdAt(),
}));

/** Signed checkpoints: the exact text signed, numbered 1, 2, … per organization. */
export const auditCheckpoints = table(
  "audit_checkpoints",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    number: c.integer("number").notNull(),
    at: c.millis("at").notNull(),
    body: c.text("body").notNull(),
    /** base64 Ed25519 signature of `body` (UTF-8) */
    signature: c.text("signature").notNull(),
  }),
  (t, c) => [c.uniqueIndex("audit_checkpoints_org_number").on(t.orgId, t.number)],
);

/**
 * Where retention cut each chain (audit/retention.ts): records below `seq` were deleted, and
 * `prev` is the hash of the last one deleted, which the first record kept names. Checkpoints
 * sign these floors, so `svc audit verify` walks each chain down to its floor, not to #1.
 */
export const auditChainFloors = table("audit_chain_floors", (c) => ({
  /** `<org id>:<chain id>`, as audit_chain_heads */
  id: c.text("id").primaryKey(),
  orgId: c.text("org_id").notNull(),
  chainId: c.text("chain_id").notNull(),
  seq: c.integer("seq").notNull(),
  prev: c.text("prev").notNull(),
  updatedAt: c.millis("updated_at").notNull(),
}));

/**
 * Where retention deleted rows of a store chain (audit/retention.ts): seqs `from`–`to` are gone;
 * `prev` is what the first of them named (the hash of row `from - 1`, null when `from` is 1) and
 * `hash` the last one's link hash, which the row after the gap names. Checkpoints sign these
 * gaps with the heads, so `svc audit verify` steps over them. Adjacent gaps are merged.
 */
export const auditStoreGaps = table(
  "audit_store_gaps",
  (c) => ({
    /** `<org id>:<chain>:<from>` */
    id: c.text("id").primaryKey(),
    orgId: c.text("org_id").notNull(),
    chain: c.text("chain").notNull(),
    fromSeq: c.integer("from_seq").notNull(),
    toSeq: c.integer("to_seq").notNull(),
    prev: c.text("prev"),
    hash: c.text("hash").notNull(),
    updatedAt: c.millis("updated_at").notNull(),
  }),
  (t, c) => [c.index("audit_store_gaps_org_chain").on(t.orgId, t.chain, t.fromSeq)],
);

/** The control plane's own verification runs of an organization's store (verify-store.ts), newest last. */
export const auditVerifications = table(
  "audit_verifications",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c.text("org_id").notNull(),
    startedAt: c.millis("started_at").notNull(),
    finishedAt: c.millis("finished_at"),
    /** running, verified, unsigned (chained, not yet signed), tampered, failed (could not run) */
    state: c.text("state", { enum: ["running", "verified", "unsigned", "tampered", "failed"] }).notNull(),
    records: c.integer("records").notNull().default(0),
    /** the checkpoint the run verified against */
    checkpoint: c.integer("checkpoint"),
    problems: c.integer("problems").notNull().default(0),
    /** what the first problem (or the failure) said */
    detail: c.text("detail"),
    /** (org, hour, key)s whose roll-ups differ from the records' sums (audit/rollup-check.ts); counted in `problems` too */
    rollupMismatches: c.integer("rollup_mismatches").notNull().default(0),
    /** what the first of them said */
    rollupDetail: c.text("rollup_detail"),
    /**
     * base64 Ed25519 signature, by the organization's checkpoint-signing key, of the finished
     * run's outcome (verification-seal.ts): a row a database writer inserted or edited has none
     * that verifies, and then counts as a finding (rollup-trust.ts). NULL while running, and on
     * runs of a release before it.
     */
    signature: c.text("signature"),
  }),
  (t, c) => [c.index("audit_verifications_org").on(t.orgId, t.startedAt)],
);
