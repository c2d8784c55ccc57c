// TODO(owner of src/controlplane/claims): the routes of this resource.
import { Elysia } from "elysia";
import type { ControlPlaneDeps } from "../deps.ts";

export function claimRoutes(_deps: ControlPlaneDeps) {
  return new Elysia({ name: "claims-routes" });
}
