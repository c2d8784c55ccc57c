// Policy routes (`svc policies create|list`): who (src) may do what (dst) for an agent or a
// whole workspace. Every write bumps the organization's bundle revision.
import { Elysia } from "elysia";
import { getAgent } from "../agents/service.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { resolveWorkspace } from "../organizations/service.ts";
import { PolicyCreate, PolicyParams, PolicyQuery } from "./model.ts";
import { createPolicy, deletePolicy, listPolicies, presentPolicy } from "./service.ts";

const tags = ["policies"];

export function policyRoutes(deps: ControlPlaneDeps) {
  const db = deps.db;
  return new Elysia({ name: "policies-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .get(
      "/policies",
      async ({ principal, query }) => {
        const ws = query.workspace ? await resolveWorkspace(db, principal.orgId, query.workspace) : undefined;
        if (query.agent_id) await getAgent(db, principal.orgId, query.agent_id);
        const rows = await listPolicies(db, principal.orgId, { ...(ws ? { workspaceId: ws.id } : {}), ...(query.agent_id ? { agentId: query.agent_id } : {}) });
        return { policies: rows.map(presentPolicy) };
      },
      { admin: true, query: PolicyQuery, detail: { tags, summary: "List policies (with agent_id: those that apply to the agent)" } },
    )
    .post(
      "/policies",
      async ({ principal, body, set }) => {
        const workspace = await resolveWorkspace(db, principal.orgId, body.workspace);
        const policy = await createPolicy(db, principal.orgId, {
          name: body.name,
          src: body.src,
          dst: body.dst,
          effect: body.effect,
          workspace,
          ...(body.agent_id ? { agentId: body.agent_id } : {}),
          ...(body.condition !== undefined ? { condition: body.condition } : {}),
          ...(body.mode ? { mode: body.mode } : {}),
        });
        set.status = 201;
        return presentPolicy(policy);
      },
      { admin: true, body: PolicyCreate, detail: { tags, summary: "Create a policy; bad src/dst → 422 invalid_pattern" } },
    )
    .delete(
      "/policies/:id",
      async ({ principal, params, set }) => {
        await deletePolicy(db, principal.orgId, params.id);
        set.status = 204;
      },
      { admin: true, params: PolicyParams, detail: { tags, summary: "Delete a policy" } },
    );
}
