// Agent routes: list, create (the console's and the API's; the CLI has no agent-create
// command) and show. The agent is what an installation, policies and a model profile bind to.
import { Elysia } from "elysia";
import { Agent, AgentList } from "../../contract/admin-policies.ts";
import { acting } from "../audit/admin-events.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { resolveWorkspace } from "../organizations/service.ts";
import { AgentCreate, IdParams, WorkspaceQuery } from "./model.ts";
import { createAgent, getAgent, listAgents, presentAgent } from "./service.ts";

const tags = ["agents"];

export function agentRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "agents-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .get(
      "/agents",
      async ({ principal, query }) => {
        const ws = query.workspace ? await resolveWorkspace(deps.db, principal.orgId, query.workspace) : null;
        return { agents: (await listAgents(deps.db, principal.orgId, ws?.id)).map(presentAgent) };
      },
      { admin: true, query: WorkspaceQuery, response: AgentList, detail: { tags, summary: "List agents" } },
    )
    .post(
      "/agents",
      async ({ principal, body, set }) => {
        const ws = await resolveWorkspace(deps.db, principal.orgId, body.workspace);
        const agent = await createAgent(deps.db, principal.orgId, { name: body.name, workspaceId: ws.id, description: body.description ?? null }, acting(deps, principal));
        set.status = 201;
        return presentAgent(agent);
      },
      { admin: true, body: AgentCreate, response: { 201: Agent }, detail: { tags, summary: "Create an agent" } },
    )
    .get("/agents/:id", async ({ principal, params }) => presentAgent(await getAgent(deps.db, principal.orgId, params.id)), {
      admin: true,
      params: IdParams,
      response: Agent,
      detail: { tags, summary: "Show an agent" },
    });
}
