// The admin view of a bundle: exactly what an installation's proxy gets (with conditions and
// shadow policies), for `svc policies test` and `simulate`, which decide with the proxy's own
// code (src/proxy/policy/policy-index.ts). Sealed secrets are left out: a what-if needs none.
import { Elysia, t } from "elysia";
import { PolicyBundle } from "../../contract/bundle.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { getInstallation } from "../installations/service.ts";
import { loadBundle } from "./load.ts";

/** The bundle without ciphertexts an admin tool has no use for. */
export function withoutSecrets(b: PolicyBundle): PolicyBundle {
  return {
    ...b,
    model_profile: b.model_profile ? { ...b.model_profile, api_key_sealed: null } : null,
    ...(b.tool_servers ? { tool_servers: b.tool_servers.map((s) => ({ ...s, secrets_sealed: null })) } : {}),
  };
}

export function bundleAdminRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "bundle-admin-routes", prefix: "/organizations/:org" }).use(authPlugin(deps)).get(
    "/installations/:id/policy-bundle",
    async ({ principal, params }) => {
      const inst = await getInstallation(deps.db, principal.orgId, params.id);
      const caller = { installationId: inst.id, orgId: principal.orgId, workspaceId: inst.workspaceId, agentId: inst.agentId, name: inst.name, replicaId: null };
      return withoutSecrets(await loadBundle(deps, caller, 2, true));
    },
    {
      admin: true,
      params: t.Object({ org: t.String(), id: t.String({ maxLength: 64 }) }),
      // Documented, not declared as `response`: Elysia's document turns the schema's number
      // literals (version 1 | 2) into a string enum, which the answer then breaks (found by
      // schemathesis). The runtime route documents the same bundle the same way.
      detail: {
        summary: "The policy bundle this installation's proxy gets (conditions included, no sealed secrets), for what-if tests",
        tags: ["policies"],
        responses: { 200: { description: "PolicyBundle", content: { "application/json": { schema: PolicyBundle as object } } } },
      },
    },
  );
}
