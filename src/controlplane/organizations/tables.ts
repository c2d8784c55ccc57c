// The tables of organizations: the organization, its digest keys, workspaces and memberships. Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";

export const organizations = table("organizations", (c) => ({
  id: c.text("id").primaryKey(),
  name: c.text("name").notNull(),
  /** Bumped by every change that can alter any of the org's policy bundles; the bundle ETag. */
  revision: c.integer("revision").notNull().default(1),
  escrowEnabled: c.bool("escrow_enabled").notNull().default(false),
  /** Audit records older than this many days are deleted (audit/retention.ts); null keeps them all. */
  auditRetentionDays: c.integer("audit_retention_days"),
  createdAt: c.createdAt(),
}));

/** The organization's audit digest key (HMAC-SHA-256), wrapped by the KMS. */
export const digestKeys = table("digest_keys", (c) => ({
  id: c.text("id").primaryKey(),
  orgId: c
    .text("org_id")
    .notNull()
    .references(() => organizations.id),
  wrapped: c.text("wrapped").notNull(),
  createdAt: c.createdAt(),
}));

export const workspaces = table(
  "workspaces",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    name: c.text("name").notNull(),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.uniqueIndex("workspaces_org_name").on(t.orgId, t.name)],
);
