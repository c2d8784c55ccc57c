// The table of installations. Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { agents } from "../agents/tables.ts";
import { organizations, workspaces } from "../organizations/tables.ts";

export const installations = table("installations", (c) => ({
  id: c.text("id").primaryKey(),
  orgId: c
    .text("org_id")
    .notNull()
    .references(() => organizations.id),
  workspaceId: c
    .text("workspace_id")
    .notNull()
    .references(() => workspaces.id),
  agentId: c
    .text("agent_id")
    .notNull()
    .references(() => agents.id),
  name: c.text("name").notNull(),
  platform: c.text("platform", { enum: ["chatui"] }).notNull(),
  /** SHA-256 of the current runtime token; null until `svc bot credential` issues one. */
  tokenHash: c.text("token_hash").unique(),
  tokenIssuedAt: c.millis("token_issued_at"),
  deletedAt: c.millis("deleted_at"),
  createdAt: c.createdAt(),
}));
