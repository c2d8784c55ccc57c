// The tables of escrow: the service's escrow identity per organization (identity.ts), and
// recovery (break-glass, issue 15): an owner's request to decrypt one audit record with that
// identity, its approval by another owner or admin, and its single use (never plaintext); and
// the organization's rule for approvers (issue 27). Declared once for both stores (db/table.ts,
// db/README.md).
import { accounts } from "../auth/tables.ts";
import { table } from "../db/table.ts";
import { organizations } from "../organizations/tables.ts";

/** The service's escrow identity per organization: public recipient plus KMS-wrapped private key (identity.ts). */
export const escrowKeys = table("escrow_keys", (c) => ({
  id: c.text("id").primaryKey(),
  orgId: c
    .text("org_id")
    .notNull()
    .unique()
    .references(() => organizations.id),
  recipient: c.text("recipient").notNull(),
  wrappedIdentity: c.text("wrapped_identity").notNull(),
  createdAt: c.createdAt(),
}));

export const auditRecoveryRequests = table(
  "audit_recovery_requests",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    /** The audit record to decrypt (not a foreign key: retention may delete the record later). */
    recordId: c.text("record_id").notNull(),
    reason: c.text("reason").notNull(),
    requestedBy: c
      .text("requested_by")
      .notNull()
      .references(() => accounts.id),
    /** pending → approved → consumed (the plaintext was handed out, once). */
    status: c.text("status", { enum: ["pending", "approved", "consumed"] }).notNull(),
    approvedBy: c.text("approved_by").references(() => accounts.id),
    approvedAt: c.millis("approved_at"),
    consumedAt: c.millis("consumed_at"),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.index("audit_recovery_requests_org_id").on(t.orgId, t.id)],
);

/**
 * How long an approver must have been a member when a request was made (recovery-policy.ts);
 * no row: the default, 24 hours. A lowering holds only for requests made once the age in force
 * before it (`previous_min_age_hours`) has passed since `changed_at`.
 */
export const auditRecoveryPolicies = table("audit_recovery_policies", (c) => ({
  orgId: c
    .text("org_id")
    .primaryKey()
    .references(() => organizations.id),
  approverMinAgeHours: c.integer("approver_min_age_hours").notNull(),
  previousMinAgeHours: c.integer("previous_min_age_hours").notNull(),
  changedAt: c.millis("changed_at").notNull(),
  changedBy: c
    .text("changed_by")
    .notNull()
    .references(() => accounts.id),
}));
