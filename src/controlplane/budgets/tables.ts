// The table of budgets (issue 16). Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { organizations } from "../organizations/tables.ts";

/** A spending limit on a user, a group (its members together) or an agent, per day or month (UTC). */
export const budgets = table(
  "budgets",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
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

/**
 * Budget leases (docs/proxy.md "Budgets"): what one proxy replica reserved of a budget in its
 * period. Open until `expires_at` (or settled): it counts as `granted` (or `consumed`, when
 * more) in what the budget has spent; settled, or expired past the grace, as `consumed`.
 */
export const budgetLeases = table(
  "budget_leases",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    budgetId: c.text("budget_id").notNull(),
    installationId: c.text("installation_id").notNull(),
    /** The replica holding it (x-svc-replica); its ingested spend is compared with its leases. */
    replicaId: c.text("replica_id"),
    /** The budget period it belongs to (epoch ms of its start). */
    periodStart: c.millis("period_start").notNull(),
    granted: c.double("granted").notNull(),
    consumed: c.double("consumed").notNull().default(0),
    settled: c.bool("settled").notNull().default(false),
    expiresAt: c.millis("expires_at").notNull(),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.index("budget_leases_budget_period").on(t.budgetId, t.periodStart)],
);
