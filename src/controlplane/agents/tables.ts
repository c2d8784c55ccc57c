// The table of agents. Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { organizations, workspaces } from "../organizations/tables.ts";

export const agents = table("agents", (c) => ({
  id: c.text("id").primaryKey(),
  orgId: c
    .text("org_id")
    .notNull()
    .references(() => organizations.id),
  workspaceId: c
    .text("workspace_id")
    .notNull()
    .references(() => workspaces.id),
  name: c.text("name").notNull(),
  description: c.text("description"),
  createdAt: c.createdAt(),
}));
