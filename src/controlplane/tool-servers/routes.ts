// Tool-server routes (`svc tool-servers …`, issue 13). A CLI seals a server's secrets to the
// runtimes listed by GET runtime-recipients (model-profiles/routes.ts) before it creates the
// server or replaces its secrets.
import { AgentToolServers, ToolServerAssignment, ToolServerDetail, ToolServerList, ToolServerReadiness } from "../../contract/admin-api.ts";
import { Elysia, t } from "elysia";
import { ensureAssertionKey } from "../assertion-keys/service.ts";
import { acting } from "../audit/admin-events.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { checkRuntimeUrl } from "../http/outbound.ts";
import { resolveWorkspace } from "../organizations/service.ts";
import { liveSince, livenessLimits } from "../installations/replicas.ts";
import { AssignParams, ServerAssign, ServerCreate, ServerParams, ServerQuery, ServerSecrets, ServerTools, ServerUpdate } from "./model.ts";
import { serverCatalogue } from "./catalogue.ts";
import { serverReadiness } from "./readiness.ts";
import {
  assignServer,
  assignedAgentIds,
  changeServer,
  createServer,
  deleteServer,
  listServers,
  presentServer,
  resolveServer,
  serversOfAgent,
  setServerSecrets,
  setServerTools,
  unassignServer,
} from "./service.ts";
import { NO_CONTENT } from "../http/openapi-complete.ts";

const tags = ["tool-servers"];

export function toolServerRoutes(deps: ControlPlaneDeps) {
  const db = deps.db;
  const wsOf = async (orgId: string, workspace?: string) => (workspace ? await resolveWorkspace(db, orgId, workspace) : undefined);
  const serverOf = async (orgId: string, id: string, workspace?: string) => resolveServer(db, orgId, id, (await wsOf(orgId, workspace))?.id);
  const live = () => liveSince(deps.now(), livenessLimits(deps.config));
  const withAgents = async (s: Awaited<ReturnType<typeof resolveServer>>) => ({ ...presentServer(s), assigned_agents: await assignedAgentIds(db, s.id) });
  // show: and the tools the runtimes listed (issue 31)
  const withTools = async (s: Awaited<ReturnType<typeof resolveServer>>) => ({
    ...(await withAgents(s)),
    tools: await serverCatalogue(db, { id: s.id, name: s.name, workspaceId: s.workspaceId, allowed_tools: s.allowedTools, access_overrides: s.accessOverrides }),
  });

  return new Elysia({ name: "tool-server-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .get("/tool-servers", async ({ principal, query }) => ({ tool_servers: (await listServers(db, principal.orgId, (await wsOf(principal.orgId, query.workspace))?.id)).map(presentServer) }), {
      admin: true,
      query: ServerQuery,
      response: ToolServerList,
      detail: { tags, summary: "List MCP tool servers (never their secrets)" },
    })
    .post(
      "/tool-servers",
      async ({ principal, body, set }) => {
        const ws = await resolveWorkspace(db, principal.orgId, body.workspace);
        if (body.url !== undefined) await checkRuntimeUrl(body.url, "url", deps.config.allowPrivateOutbound);
        const server = await createServer(db, principal.orgId, ws, body, live(), acting(deps, principal), deps.kms);
        if (server.assertionHeader !== null) await ensureAssertionKey(deps, principal.orgId);
        set.status = 201;
        return { ...presentServer(server), assigned_agents: [] };
      },
      {
        admin: true,
        body: ServerCreate,
        response: { 201: ToolServerDetail },
        detail: { tags, summary: "Create an MCP tool server (http: https URL; stdio: a command in the image; secrets only sealed)" },
      },
    )
    .get("/tool-servers/:id", async ({ principal, params, query }) => withTools(await serverOf(principal.orgId, params.id, query.workspace)), {
      admin: true,
      params: ServerParams,
      query: ServerQuery,
      response: ToolServerDetail,
      detail: { tags, summary: "Show a tool server by id or name, with the agents it is assigned to and the tools its runtimes listed (governed and upstream names, served or why not)" },
    })
    .patch(
      "/tool-servers/:id",
      async ({ principal, params, query, body }) => {
        const server = await serverOf(principal.orgId, params.id, query.workspace);
        if (body.url !== undefined && server.transport === "http") await checkRuntimeUrl(body.url, "url", deps.config.allowPrivateOutbound);
        const changed = await changeServer(db, principal.orgId, server, body, live(), acting(deps, principal));
        if (changed.assertionHeader !== null) await ensureAssertionKey(deps, principal.orgId);
        return withAgents(changed);
      },
      {
        admin: true,
        params: ServerParams,
        query: ServerQuery,
        body: ServerUpdate,
        response: ToolServerDetail,
        detail: { tags, summary: "Change the url (http), command and args (stdio), sealed secrets, allow-list or access overrides; the others stay (422 naming the field)" },
      },
    )
    .delete(
      "/tool-servers/:id",
      async ({ principal, params, query, set }) => {
        await deleteServer(db, principal.orgId, await serverOf(principal.orgId, params.id, query.workspace), acting(deps, principal));
        set.status = 204;
      },
      { admin: true, params: ServerParams, query: ServerQuery, detail: { tags, summary: "Delete a tool server no agent is assigned (409 while assigned)", responses: NO_CONTENT } },
    )
    .put(
      "/tool-servers/:id/secrets",
      async ({ principal, params, query, body }) =>
        withAgents(await setServerSecrets(db, principal.orgId, await serverOf(principal.orgId, params.id, query.workspace), body, live(), acting(deps, principal))),
      {
        admin: true,
        params: ServerParams,
        query: ServerQuery,
        body: ServerSecrets,
        response: ToolServerDetail,
        detail: { tags, summary: "Replace the sealed secrets (new values, or re-sealed to new runtimes)" },
      },
    )
    .put(
      "/tool-servers/:id/tools",
      async ({ principal, params, query, body }) => withAgents(await setServerTools(db, principal.orgId, await serverOf(principal.orgId, params.id, query.workspace), body, acting(deps, principal))),
      { admin: true, params: ServerParams, query: ServerQuery, body: ServerTools, response: ToolServerDetail, detail: { tags, summary: "Replace the allow-list and the per-tool access overrides" } },
    )
    .get("/tool-servers/:id/readiness", async ({ principal, params, query }) => serverReadiness(db, await serverOf(principal.orgId, params.id, query.workspace), live()), {
      admin: true,
      params: ServerParams,
      query: ServerQuery,
      response: ToolServerReadiness,
      detail: { tags, summary: "Whether runtimes serve the server's tools now, check by check, with each live replica's report" },
    })
    .post(
      "/tool-servers/:id/assign",
      async ({ principal, params, query, body }) => assignServer(db, principal.orgId, await serverOf(principal.orgId, params.id, query.workspace), body.agent_id, acting(deps, principal)),
      {
        admin: true,
        params: ServerParams,
        query: ServerQuery,
        body: ServerAssign,
        response: ToolServerAssignment,
        detail: { tags, summary: "Assign the server to an agent of its workspace (idempotent)" },
      },
    )
    .delete(
      "/tool-servers/:id/assignments/:agent",
      async ({ principal, params, query }) => unassignServer(db, principal.orgId, await serverOf(principal.orgId, params.id, query.workspace), params.agent, acting(deps, principal)),
      { admin: true, params: AssignParams, query: ServerQuery, response: ToolServerAssignment, detail: { tags, summary: "Take the server away from an agent" } },
    )
    .get("/tool-server-assignments", async ({ principal, query }) => ({ agent_id: query.agent_id, tool_servers: await serversOfAgent(db, principal.orgId, query.agent_id) }), {
      admin: true,
      query: t.Object({ agent_id: t.String({ minLength: 1, maxLength: 64 }) }),
      response: AgentToolServers,
      detail: { tags, summary: "The tool servers assigned to an agent" },
    });
}
