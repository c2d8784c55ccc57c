// The tables of MCP tool servers and their assignment to agents (issue 13). Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { agents } from "../agents/tables.ts";
import { installations } from "../installations/tables.ts";
import { organizations, workspaces } from "../organizations/tables.ts";

export const toolServers = table(
  "tool_servers",
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
    /** How the runtime authenticates to the server: `secrets` (sealed headers/env, or none) or `oauth` (each user's own token, issue 32). */
    auth: c
      .text("auth", { enum: ["secrets", "oauth"] })
      .notNull()
      .default("secrets"),
    /** http: the header each request to the server carries a signed identity assertion in (issue 32); null: none. */
    assertionHeader: c.text("assertion_header"),
    /** The assertion's `aud`; null: the server's URL. */
    assertionAudience: c.text("assertion_audience"),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.uniqueIndex("tool_servers_ws_name").on(t.workspaceId, t.name)],
);

/** Which servers an agent's runtimes serve: any number per agent, each server to any number of agents. */
export const toolServerAssignments = table(
  "tool_server_assignments",
  (c) => ({
    agentId: c
      .text("agent_id")
      .notNull()
      .references(() => agents.id),
    serverId: c
      .text("server_id")
      .notNull()
      .references(() => toolServers.id),
    assignedAt: c.millis("assigned_at").notNull(),
  }),
  (t, c) => [c.primaryKey({ columns: [t.agentId, t.serverId] }), c.index("tool_server_assignments_server").on(t.serverId)],
);

/**
 * What each installation's runtimes last listed from a server (issue 31): the governed tools
 * and the ones not served, with why. MCP tools belong to the agent: a bundle carries the union
 * over the agent's installations, so installations never conflict, and a listing that fails
 * (a crash, an outage) changes nothing here.
 */
export const toolServerTools = table(
  "tool_server_tools",
  (c) => ({
    serverId: c
      .text("server_id")
      .notNull()
      .references(() => toolServers.id),
    installationId: c
      .text("installation_id")
      .notNull()
      .references(() => installations.id),
    tools: c.json<Array<{ name: string; upstream: string; access: "read" | "write" }>>("tools").notNull().default([]),
    skipped: c.json<Array<{ tool: string; why: string }>>("skipped").notNull().default([]),
    listedAt: c.millis("listed_at").notNull(),
  }),
  (t, c) => [c.primaryKey({ columns: [t.serverId, t.installationId] }), c.index("tool_server_tools_installation").on(t.installationId)],
);
