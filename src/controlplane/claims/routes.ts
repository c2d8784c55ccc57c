// POST /api/v1/runtime/claims: the proxy asks for a one-time claim link for an unlinked
// front-end user. The console's /claim/<token> page redeems it (service.ts).
import { Elysia } from "elysia";
import { ClaimRequest, ClaimResponse } from "../../contract/runtime-api.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { createClaim } from "./service.ts";

export function claimRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "claims-routes", prefix: "/runtime" })
    .use(authPlugin(deps))
    .post("/claims", async ({ runtime, body }) => createClaim(deps, runtime, { remoteUserId: body.remote_user_id, email: body.email ?? null, name: body.name ?? null }), {
      runtime: true,
      body: ClaimRequest,
      response: ClaimResponse,
      detail: { summary: "A one-time claim link for an unlinked front-end user", tags: ["runtime"] },
    });
}
