// The table of policies. Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { agents } from "../agents/tables.ts";
import { organizations, workspaces } from "../organizations/tables.ts";

export const policies = table(
  "policies",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    workspaceId: c
      .text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    /** null: applies to every agent of the workspace. */
    agentId: c.text("agent_id").references(() => agents.id),
    name: c.text("name").notNull(),
    src: c.text("src").notNull(),
    dst: c.text("dst").notNull(),
    effect: c.text("effect", { enum: ["permit", "deny"] }).notNull(),
    /** A CEL expression over args, user and now (contract/conditions.ts); null: the policy always applies. */
    condition: c.text("condition"),
    /** shadow: evaluated and recorded on the audit record, never changes the outcome. */
    mode: c
      .text("mode", { enum: ["enforce", "shadow"] })
      .notNull()
      .default("enforce"),
    /**
     * The policy features it needs (replicas/features.ts): what this release derives from its
     * fields, and what a later release adds for fields this one does not know. A replica that
     * cannot express one of them sends the policy's narrower form (issue 29).
     */
    requires: c.json<string[]>("requires").notNull().default([]),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.index("policies_ws_agent").on(t.workspaceId, t.agentId)],
);
