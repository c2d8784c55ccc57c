// The tables of directory sync: per-organization settings and runs. Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { organizations } from "../organizations/tables.ts";

export const directorySyncConfigs = table("directory_sync_configs", (c) => ({
  orgId: c
    .text("org_id")
    .primaryKey()
    .references(() => organizations.id),
  tenantId: c.text("tenant_id").notNull(),
  clientId: c.text("client_id").notNull(),
  appId: c.text("app_id").notNull(),
  wrappedClientSecret: c.text("wrapped_client_secret").notNull(),
  dryRun: c.bool("dry_run").notNull(),
  createUsers: c.bool("create_users").notNull(),
  authorityUrl: c.text("authority_url").notNull(),
  graphUrl: c.text("graph_url").notNull(),
  intervalSeconds: c.integer("interval_seconds").notNull(),
  enabled: c.bool("enabled").notNull().default(false),
  updatedAt: c.millis("updated_at").notNull(),
}));

export const directorySyncRuns = table(
  "directory_sync_runs",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    startedAt: c.millis("started_at").notNull(),
    finishedAt: c.millis("finished_at"),
    dryRun: c.bool("dry_run").notNull(),
    status: c.text("status", { enum: ["running", "succeeded", "failed"] }).notNull(),
    counts: c.json<Record<string, number>>("counts").notNull(),
    changes: c.json<unknown[]>("changes").notNull(),
    errors: c.json<string[]>("errors").notNull(),
  }),
  (t, c) => [c.index("directory_sync_runs_org").on(t.orgId, t.startedAt)],
);
