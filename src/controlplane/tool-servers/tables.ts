// The tables of MCP tool servers and their assignment to agents (issue 13). Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { agents } from "../agents/tables.ts";
import { organizations, workspaces } from "../organizations/tables.ts";

export const toolServers = table(
  "tool_servers",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c.text("org_id").notNull().references(() => organizations.id),
    workspaceId: c.text("workspace_id").notNull().references(() => workspaces.id),
    /** The tool-name prefix: server `github` + tool `create_issue` → `tool:github.create_issue`. */
    name: c.text("name").notNull(),
    transport: c.text("transport", { enum: ["http", "stdio"] }).notNull(),
    url: c.text("url"),
    command: c.text("command"),
    args: c.json<string[]>("args").notNull().default([]),
    /** base64 age ciphertext of {name: value} (http headers or stdio environment), sealed to the replicas in sealedTo. Never plaintext. */
    secretsSealed: c.text("secrets_sealed"),
    /** The header or variable names the sealed object holds, as the sealing CLI declared them (the values stay sealed). */
    secretNames: c.json<string[]>("secret_names").notNull().default([]),
    sealedTo: c.json<string[]>("sealed_to").notNull().default([]),
    /** The credential-sync recipients (age1…) of those replicas when the secrets were stored: what readiness compares. */
    sealedRecipients: c.json<string[]>("sealed_recipients").notNull().default([]),
    /** Upstream tool names served; null = every tool the server lists. */
    allowedTools: c.json<string[]>("allowed_tools"),
    /** Upstream tool name → access, overriding the MCP annotations (readOnlyHint). */
    accessOverrides: c.json<Record<string, "read" | "write">>("access_overrides").notNull().default({}),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.uniqueIndex("tool_servers_ws_name").on(t.workspaceId, t.name)],
);

/** Which servers an agent's runtimes serve: any number per agent, each server to any number of agents. */
export const toolServerAssignments = table(
  "tool_server_assignments",
  (c) => ({
    agentId: c.text("agent_id").notNull().references(() => agents.id),
    serverId: c.text("server_id").notNull().references(() => toolServers.id),
    assignedAt: c.millis("assigned_at").notNull(),
  }),
  (t, c) => [c.primaryKey({ columns: [t.agentId, t.serverId] }), c.index("tool_server_assignments_server").on(t.serverId)],
);
