// Model-profile routes (`svc model-profiles create|assignment|readiness|assign`), and the
// runtime recipients a CLI seals an API key to before it creates or re-keys a profile.
import { ModelProfile, ModelProfileAssigned, ModelProfileAssignment, ModelProfileList, Readiness, RuntimeRecipientList } from "../../contract/admin-api.ts";
import { Elysia } from "elysia";
import { getAgentInWorkspace } from "../agents/service.ts";
import { acting } from "../audit/admin-events.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { checkRuntimeUrl } from "../http/outbound.ts";
import { resolveWorkspace } from "../organizations/service.ts";
import { liveSince, livenessLimits, recipientsInScope } from "../installations/replicas.ts";
import { AssignmentQuery, ProfileApiKey, ProfileAssign, ProfileCreate, ProfileParams, ProfilePrices, ProfileQuery, ScopeQuery } from "./model.ts";
import { profileReadiness } from "./readiness.ts";
import { assignProfile, assignmentOf, createProfile, listProfiles, presentProfile, resolveProfile, setProfileApiKey, setProfilePrices } from "./service.ts";

const tags = ["model-profiles"];

export function modelProfileRoutes(deps: ControlPlaneDeps) {
  const db = deps.db;
  const wsOf = async (orgId: string, workspace?: string) => (workspace ? await resolveWorkspace(db, orgId, workspace) : undefined);
  const profileOf = async (orgId: string, id: string, workspace?: string) => resolveProfile(db, orgId, id, (await wsOf(orgId, workspace))?.id);
  /** Replicas heard from since then count (stale and gone ones do not): installations/replicas.ts. */
  const live = () => liveSince(deps.now(), livenessLimits(deps.config));

  return new Elysia({ name: "model-profiles-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .get(
      "/runtime-recipients",
      async ({ principal, query }) => {
        const ws = await resolveWorkspace(db, principal.orgId, query.workspace);
        if (query.agent_id) await getAgentInWorkspace(db, principal.orgId, query.agent_id, ws);
        return { recipients: await recipientsInScope(db, ws.id, query.agent_id ?? null, { liveSince: live() }) };
      },
      {
        admin: true,
        query: ScopeQuery,
        response: RuntimeRecipientList,
        detail: { tags, summary: "Credential-sync keys of the scope's live runtimes, to seal an API key to (stale and gone replicas are left out)" },
      },
    )
    .get("/model-profiles", async ({ principal, query }) => ({ model_profiles: (await listProfiles(db, principal.orgId, (await wsOf(principal.orgId, query.workspace))?.id)).map(presentProfile) }), {
      admin: true,
      query: ProfileQuery,
      response: ModelProfileList,
      detail: { tags, summary: "List model profiles (never the key)" },
    })
    .post(
      "/model-profiles",
      async ({ principal, body, set }) => {
        const ws = await resolveWorkspace(db, principal.orgId, body.workspace);
        await checkRuntimeUrl(body.endpoint, "endpoint", deps.config.allowPrivateOutbound);
        const profile = await createProfile(db, principal.orgId, ws, body, live(), acting(deps, principal));
        set.status = 201;
        return presentProfile(profile);
      },
      { admin: true, body: ProfileCreate, response: { 201: ModelProfile }, detail: { tags, summary: "Create a model profile (https endpoint; api_key auth takes a sealed key)" } },
    )
    .get("/model-profiles/:id", async ({ principal, params, query }) => presentProfile(await profileOf(principal.orgId, params.id, query.workspace)), {
      admin: true,
      params: ProfileParams,
      query: ProfileQuery,
      response: ModelProfile,
      detail: { tags, summary: "Show a model profile by id or display name" },
    })
    .put(
      "/model-profiles/:id/api-key",
      async ({ principal, params, query, body }) =>
        presentProfile(await setProfileApiKey(db, principal.orgId, await profileOf(principal.orgId, params.id, query.workspace), body, live(), acting(deps, principal))),
      { admin: true, params: ProfileParams, query: ProfileQuery, body: ProfileApiKey, response: ModelProfile, detail: { tags, summary: "Replace the sealed API key (re-seal to new runtimes)" } },
    )
    .put(
      "/model-profiles/:id/prices",
      async ({ principal, params, query, body }) =>
        presentProfile(await setProfilePrices(db, principal.orgId, await profileOf(principal.orgId, params.id, query.workspace), body, acting(deps, principal))),
      {
        admin: true,
        params: ProfileParams,
        query: ProfileQuery,
        body: ProfilePrices,
        response: ModelProfile,
        detail: { tags, summary: "Replace the per-model prices (per 1M tokens) the usage cost is computed with" },
      },
    )
    .get(
      "/model-profiles/:id/readiness",
      async ({ principal, params, query }) => profileReadiness(db, await profileOf(principal.orgId, params.id, query.workspace), { now: deps.now(), limits: livenessLimits(deps.config) }),
      {
        admin: true,
        params: ProfileParams,
        query: ProfileQuery,
        response: Readiness,
        detail: { tags, summary: "Whether runtimes can use the profile now, check by check" },
      },
    )
    .post(
      "/model-profiles/:id/assign",
      async ({ principal, params, query, body }) => assignProfile(db, principal.orgId, await profileOf(principal.orgId, params.id, query.workspace), body.agent_id, acting(deps, principal)),
      { admin: true, params: ProfileParams, query: ProfileQuery, body: ProfileAssign, response: ModelProfileAssigned, detail: { tags, summary: "Assign the profile to an agent of its workspace" } },
    )
    .get("/model-profile-assignments", async ({ principal, query }) => assignmentOf(db, principal.orgId, query.agent_id, await wsOf(principal.orgId, query.workspace)), {
      admin: true,
      query: AssignmentQuery,
      response: ModelProfileAssignment,
      detail: { tags, summary: "The profile assigned to an agent, or null" },
    });
}
