// The tables of SIEM streaming (issue 15, sinks/README.md): each organization's sinks, with the
// delivery cursor, health and the lease that lets one control-plane replica deliver per sink.
// Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { organizations } from "../organizations/tables.ts";

export const SINK_KINDS = ["webhook", "syslog", "otlp"] as const;
export type SinkKind = (typeof SINK_KINDS)[number];

/** Kind-specific settings that are not secret (validated by sinks/config.ts). */
export type SinkOptions = {
  /** syslog: PEM of the CA that signed the receiver's certificate, when not a public one. */
  ca_pem?: string;
  /** syslog: the name checked in the receiver's certificate (default: the host). */
  server_name?: string;
  /** What each event is (issue 35): absent for svc's own record; "ocsf" or "ecs" (audit/siem-record.ts). */
  format?: "ocsf" | "ecs";
};

export const siemSinks = table(
  "siem_sinks",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    name: c.text("name").notNull(),
    kind: c.text("kind", { enum: SINK_KINDS }).notNull(),
    /** webhook/otlp: an https URL (http only to loopback); syslog: host:port of a TLS listener. */
    endpoint: c.text("endpoint").notNull(),
    options: c.json<SinkOptions>("options").notNull().default({}),
    /** The HMAC key (webhook) or bearer token (otlp), wrapped by the KMS; write-only. */
    wrappedSecret: c.text("wrapped_secret"),
    /** Send each record's age ciphertext (base64); default off: digest-only fields. */
    includeCiphertext: c.bool("include_ciphertext").notNull().default(false),
    enabled: c.bool("enabled").notNull().default(true),
    /** Delivered up to and including (cursor_received_at, cursor_id), in (received_at, id) order. */
    cursorReceivedAt: c.millis("cursor_received_at").notNull(),
    cursorId: c.text("cursor_id").notNull().default(""),
    /**
     * Delivered up to and including these numbers of the organization's "store" and "admin"
     * chains (commit order, contract/store-chain.ts). Null while the sink still delivers the
     * rows stored before the store chains, by (received_at, id) above (deliver.ts).
     */
    cursorStoreSeq: c.integer("cursor_store_seq"),
    cursorAdminSeq: c.integer("cursor_admin_seq"),
    delivered: c.integer("delivered").notNull().default(0),
    lastSuccessAt: c.millis("last_success_at"),
    lastErrorAt: c.millis("last_error_at"),
    lastError: c.text("last_error"),
    /** Failed attempts in a row; the next waits 2^failures seconds (capped). */
    failures: c.integer("failures").notNull().default(0),
    nextAttemptAt: c.millis("next_attempt_at").notNull().default(0),
    /** The replica delivering this sink until lease_until (several replicas on PostgreSQL). */
    leaseOwner: c.text("lease_owner"),
    leaseUntil: c.millis("lease_until").notNull().default(0),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.uniqueIndex("siem_sinks_org_name").on(t.orgId, t.name)],
);
