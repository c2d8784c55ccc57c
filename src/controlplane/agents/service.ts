// Agents: the chat agent an installation is bound to, in one workspace. Policies and the model
// profile assignment attach to agents. Other folders check agents through these functions.
import { and, eq } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Db, schema } from "../db/index.ts";

export type AgentRow = typeof schema.agents.$inferSelect;

export function presentAgent(a: AgentRow) {
  return { id: a.id, name: a.name, description: a.description, workspace_id: a.workspaceId, created_at: new Date(a.createdAt).toISOString() };
}

/** An agent of the organization; 404 agent_not_found otherwise (another organization's agent included). */
export function getAgent(db: Db, orgId: string, agentId: string): AgentRow {
  const row = db.select().from(schema.agents).where(and(eq(schema.agents.orgId, orgId), eq(schema.agents.id, agentId))).get();
  if (!row) throw new SvcError("agent_not_found", `agent ${agentId} not found in this organization`);
  return row;
}

/** An agent that must belong to the given workspace: 422 naming both workspaces when it does not. */
export function getAgentInWorkspace(db: Db, orgId: string, agentId: string, workspace: { id: string; name: string }, field = "agent_id"): AgentRow {
  const agent = getAgent(db, orgId, agentId);
  if (agent.workspaceId !== workspace.id) {
    const message = `agent ${agentId} belongs to another workspace (${agent.workspaceId}), not to workspace "${workspace.name}"`;
    throw new SvcError("validation_failed", message, { errors: [{ path: `/${field}`, message }] });
  }
  return agent;
}

export function listAgents(db: Db, orgId: string, workspaceId?: string): AgentRow[] {
  const a = schema.agents;
  return db
    .select()
    .from(a)
    .where(workspaceId ? and(eq(a.orgId, orgId), eq(a.workspaceId, workspaceId)) : eq(a.orgId, orgId))
    .orderBy(a.id)
    .all();
}

export function createAgent(db: Db, orgId: string, input: { name: string; workspaceId: string; description?: string | null }): AgentRow {
  const name = input.name.trim();
  if (!name) throw new SvcError("validation_failed", "the agent name is empty", { errors: [{ path: "/name", message: "empty" }] });
  const a = schema.agents;
  const clash = db.select({ id: a.id }).from(a).where(and(eq(a.orgId, orgId), eq(a.workspaceId, input.workspaceId), eq(a.name, name))).get();
  if (clash) throw new SvcError("conflict", `an agent named "${name}" already exists in this workspace (${clash.id})`);
  const id = newId("agent");
  db.insert(a).values({ id, orgId, workspaceId: input.workspaceId, name, description: input.description ?? null }).run();
  return db.select().from(a).where(eq(a.id, id)).get()!;
}
