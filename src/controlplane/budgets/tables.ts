// The table of budgets (issue 16). Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { organizations } from "../organizations/tables.ts";

/** A spending limit on a user, a group (its members together) or an agent, per day or month (UTC). */
export const budgets = table(
  "budgets",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c.text("org_id").notNull().references(() => organizations.id),
    name: c.text("name").notNull(),
    scope: c.text("scope", { enum: ["user", "group", "agent"] }).notNull(),
    /** usr_…, grp_… or agt_… */
    scopeId: c.text("scope_id").notNull(),
    period: c.text("period", { enum: ["day", "month"] }).notNull(),
    unit: c.text("unit", { enum: ["tokens", "money"] }).notNull(),
    /** Tokens (prompt + completion), or money in the currency of the model profiles' prices. */
    limit: c.double("limit").notNull(),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.uniqueIndex("budgets_org_name").on(t.orgId, t.name)],
);
