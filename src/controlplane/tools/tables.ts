// The table of the tool registry: the governed tools installations sync (and admins hold). Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { installations } from "../installations/tables.ts";
import { workspaces } from "../organizations/tables.ts";

/** Governed tools registered in a workspace: by an installation's tool sync or by an admin (installation null). */
export const tools = table(
  "tools",
  (c) => ({
    workspaceId: c
      .text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    name: c.text("name").notNull(),
    installationId: c.text("installation_id").references(() => installations.id),
    access: c.text("access", { enum: ["read", "write"] }).notNull(),
    requiredCapabilities: c.json<string[]>("required_capabilities").notNull(),
    toolkitId: c.text("toolkit_id"),
    updatedAt: c.millis("updated_at").notNull(),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.primaryKey({ columns: [t.workspaceId, t.name] }), c.index("tools_installation").on(t.installationId)],
);
