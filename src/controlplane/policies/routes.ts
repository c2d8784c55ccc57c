// Policy routes (`svc policies create|list|update|delete|apply|export`): who (src) may do what (dst) for an agent or a
// whole workspace. Every write bumps the organization's bundle revision.
import { Elysia } from "elysia";
import { PolicyApplyResult, PolicyList, PolicyWritten } from "../../contract/admin-policies.ts";
import { getAgent } from "../agents/service.ts";
import { acting } from "../audit/admin-events.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { resolveWorkspace } from "../organizations/service.ts";
import { applyPolicies, checkTools } from "./apply.ts";
import { PolicyApply, PolicyCreate, PolicyParams, PolicyQuery, PolicyUpdate } from "./model.ts";
import { createPolicy, deletePolicy, listPolicies, type PolicyInput, policySpec, presentPolicy, updatePolicy } from "./service.ts";
import { NO_CONTENT } from "../http/openapi-complete.ts";

type WireFields = { name?: string; src?: string; dst?: string; effect?: "permit" | "deny"; agent_id?: string | null; condition?: string | null; mode?: "enforce" | "shadow" };

/** The request's policy fields as service input (only those sent). */
function inputOf(b: WireFields): Partial<PolicyInput> {
  return {
    ...(b.name !== undefined ? { name: b.name } : {}),
    ...(b.src !== undefined ? { src: b.src } : {}),
    ...(b.dst !== undefined ? { dst: b.dst } : {}),
    ...(b.effect !== undefined ? { effect: b.effect } : {}),
    ...(b.agent_id !== undefined ? { agentId: b.agent_id } : {}),
    ...(b.condition !== undefined ? { condition: b.condition } : {}),
    ...(b.mode !== undefined ? { mode: b.mode } : {}),
  };
}

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
      { admin: true, query: PolicyQuery, response: PolicyList, detail: { tags, summary: "List policies (with agent_id: those that apply to the agent)" } },
    )
    .post(
      "/policies",
      async ({ principal, body, set }) => {
        const workspace = await resolveWorkspace(db, principal.orgId, body.workspace);
        const input = inputOf(body) as PolicyInput;
        const warnings = await checkTools(db, workspace.id, [policySpec(input)], body.strict ?? false);
        const policy = await createPolicy(db, principal.orgId, { ...input, workspace }, acting(deps, principal));
        set.status = 201;
        return { ...presentPolicy(policy), warnings };
      },
      {
        admin: true,
        body: PolicyCreate,
        response: { 201: PolicyWritten },
        detail: { tags, summary: "Create a policy; bad src/dst → 422 invalid_pattern, bad condition → 422 invalid_condition; an unregistered tool is a warning (422 under strict)" },
      },
    )
    .post(
      "/policies/apply",
      async ({ principal, body }) => {
        const workspace = await resolveWorkspace(db, principal.orgId, body.workspace);
        return applyPolicies(
          db,
          principal.orgId,
          workspace,
          body.policies.map((p) => inputOf(p) as PolicyInput),
          { dryRun: body.dry_run ?? false, strict: body.strict ?? false },
          acting(deps, principal),
        );
      },
      { admin: true, body: PolicyApply, response: PolicyApplyResult, detail: { tags, summary: "Make the workspace's policies exactly these (matched by name): plan, then apply all or nothing" } },
    )
    .patch(
      "/policies/:id",
      async ({ principal, params, body }) => {
        const change = inputOf(body);
        const policy = await updatePolicy(db, principal.orgId, params.id, change, acting(deps, principal));
        const warnings = change.dst ? await checkTools(db, policy.workspaceId, [policy], false) : [];
        return { ...presentPolicy(policy), warnings };
      },
      { admin: true, params: PolicyParams, body: PolicyUpdate, response: PolicyWritten, detail: { tags, summary: "Change a policy's fields; the same checks as creation" } },
    )
    .delete(
      "/policies/:id",
      async ({ principal, params, set }) => {
        await deletePolicy(db, principal.orgId, params.id, acting(deps, principal));
        set.status = 204;
      },
      { admin: true, params: PolicyParams, detail: { tags, summary: "Delete a policy", responses: NO_CONTENT } },
    );
}
