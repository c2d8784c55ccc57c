// Agents: the chat agent an installation is bound to, in one workspace. Policies and the model
// profile assignment attach to agents. Other folders check agents through these functions.
import { and, eq } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Acting, recordChange } from "../audit/admin-events.ts";
import { type Db, type Tables, tables } from "../db/index.ts";

export type AgentRow = Tables["agents"]["$inferSelect"];

export function presentAgent(a: AgentRow) {
  return { id: a.id, name: a.name, description: a.description, workspace_id: a.workspaceId, created_at: new Date(a.createdAt).toISOString() };
}

/** An agent of the organization; 404 agent_not_found otherwise (another organization's agent included). */
export async function getAgent(db: Db, orgId: string, agentId: string): Promise<AgentRow> {
  const a = tables(db).agents;
  const [row] = await db
    .select()
    .from(a)
    .where(and(eq(a.orgId, orgId), eq(a.id, agentId)));
  if (!row) throw new SvcError("agent_not_found", `agent ${agentId} not found in this organization`);
  return row;
}

/** An agent that must belong to the given workspace: 422 naming both workspaces when it does not. */
export async function getAgentInWorkspace(db: Db, orgId: string, agentId: string, workspace: { id: string; name: string }, field = "agent_id"): Promise<AgentRow> {
  const agent = await getAgent(db, orgId, agentId);
  if (agent.workspaceId !== workspace.id) {
    const message = `agent ${agentId} belongs to another workspace (${agent.workspaceId}), not to workspace "${workspace.name}"`;
    throw new SvcError("validation_failed", message, { errors: [{ path: `/${field}`, message }] });
  }
  return agent;
}

export async function listAgents(db: Db, orgId: string, workspaceId?: string): Promise<AgentRow[]> {
  const a = tables(db).agents;
  return db
    .select()
    .from(a)
    .where(workspaceId ? and(eq(a.orgId, orgId), eq(a.workspaceId, workspaceId)) : eq(a.orgId, orgId))
    .orderBy(a.id);
}

/**
 * Creates an agent. Names are unique per workspace; no index enforces that, so the check and
 * the insert run in one transaction (serializable on PostgreSQL: a concurrent twin is retried
 * and then sees the clash).
 */
export async function createAgent(db: Db, orgId: string, input: { name: string; workspaceId: string; description?: string | null }, by: Acting): Promise<AgentRow> {
  const name = input.name.trim();
  if (!name) throw new SvcError("validation_failed", "the agent name is empty", { errors: [{ path: "/name", message: "empty" }] });
  const id = newId("agent");
  return db.transaction(async (tx) => {
    const a = tables(tx).agents;
    const [clash] = await tx
      .select({ id: a.id })
      .from(a)
      .where(and(eq(a.orgId, orgId), eq(a.workspaceId, input.workspaceId), eq(a.name, name)))
      .limit(1);
    if (clash) throw new SvcError("conflict", `an agent named "${name}" already exists in this workspace (${clash.id})`);
    const [created] = await tx
      .insert(a)
      .values({ id, orgId, workspaceId: input.workspaceId, name, description: input.description ?? null })
      .returning();
    await recordChange(tx, by, { orgId, workspaceId: input.workspaceId, action: "agent.create", target: { type: "agent", id, name }, after: presentAgent(created!) });
    return created!;
  });
}
