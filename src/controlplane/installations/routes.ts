// Installation routes (`svc bot init|list|status|agents list|credential`): create, list, status
// with replicas, bound agent, registered tools, the runtime credential, delete.
import { Elysia } from "elysia";
import { Installation, InstallationList, InstallationStatus, RuntimeCredential } from "../../contract/admin-api.ts";
import { InstalledToolList } from "../../contract/admin-api.ts";
import { AgentList } from "../../contract/admin-policies.ts";
import { IdParams, WorkspaceQuery } from "../agents/model.ts";
import { getAgent, presentAgent } from "../agents/service.ts";
import { acting } from "../audit/admin-events.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { resolveWorkspace } from "../organizations/service.ts";
import { CredentialRequest, InstallationCreate } from "./model.ts";
import { livenessLimits } from "./replicas.ts";
import { createInstallation, deleteInstallation, getInstallation, installationStatus, issueCredential, listInstallations } from "./service.ts";
import { installationTools } from "../bundle/load.ts";
import { NO_CONTENT } from "../http/openapi-complete.ts";

const tags = ["installations"];

export function installationRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "installations-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .get(
      "/installations",
      async ({ principal, query }) => {
        const ws = query.workspace ? await resolveWorkspace(deps.db, principal.orgId, query.workspace) : null;
        return { installations: await listInstallations(deps.db, principal.orgId, ws?.id) };
      },
      { admin: true, query: WorkspaceQuery, response: InstallationList, detail: { tags, summary: "List installations" } },
    )
    .post(
      "/installations",
      async ({ principal, body, set }) => {
        const inst = await createInstallation(deps.db, principal.orgId, { platform: body.platform, name: body.name, agentId: body.agent_id, workspace: body.workspace }, acting(deps, principal));
        set.status = 201;
        return inst;
      },
      { admin: true, body: InstallationCreate, response: { 201: Installation }, detail: { tags, summary: "Create an installation (platform must be chatui)" } },
    )
    .get("/installations/:id", async ({ principal, params }) => installationStatus(deps.db, principal.orgId, params.id, { now: deps.now(), limits: livenessLimits(deps.config) }), {
      admin: true,
      params: IdParams,
      response: InstallationStatus,
      detail: { tags, summary: "Installation status with its replicas (state stale or gone when one has not been heard from for a while)" },
    })
    .get(
      "/installations/:id/agents",
      async ({ principal, params }) => {
        const inst = await getInstallation(deps.db, principal.orgId, params.id);
        return { agents: [presentAgent(await getAgent(deps.db, principal.orgId, inst.agentId))] };
      },
      { admin: true, params: IdParams, response: AgentList, detail: { tags, summary: "The agent bound to the installation" } },
    )
    .get("/installations/:id/tools", async ({ principal, params }) => ({ tools: await installationTools(deps.db, await getInstallation(deps.db, principal.orgId, params.id)) }), {
      admin: true,
      params: IdParams,
      response: InstalledToolList,
      detail: { tags, summary: "The installation's tools as its bundle carries them: its packs' tools and its agent's MCP tools (with server and upstream name)" },
    })
    .post(
      "/installations/:id/credential",
      async ({ principal, params, body, set }) => {
        set.headers["cache-control"] = "no-store";
        return issueCredential(deps, principal.orgId, params.id, body?.rotate ?? false, acting(deps, principal));
      },
      { admin: true, params: IdParams, body: CredentialRequest, response: RuntimeCredential, detail: { tags, summary: "Issue or rotate the runtime token (shown once)" } },
    )
    .delete(
      "/installations/:id",
      async ({ principal, params, set }) => {
        await deleteInstallation(deps, principal.orgId, params.id, acting(deps, principal));
        set.status = 204;
      },
      { admin: true, params: IdParams, detail: { tags, summary: "Delete an installation; its token stops working", responses: NO_CONTENT } },
    );
}
