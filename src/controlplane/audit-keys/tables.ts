// The table of audit encryption keys. Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { organizations } from "../organizations/tables.ts";

export const auditKeys = table("audit_keys", (c) => ({
  id: c.text("id").primaryKey(),
  orgId: c
    .text("org_id")
    .notNull()
    .references(() => organizations.id),
  name: c.text("name").notNull(),
  publicKey: c.text("public_key").notNull(),
  status: c.text("status", { enum: ["active", "disabled"] }).notNull(),
  disabledAt: c.millis("disabled_at"),
  /** Why the service disabled it (a recipient age cannot encrypt to); null when an admin did. */
  disabledReason: c.text("disabled_reason"),
  createdAt: c.createdAt(),
}));
