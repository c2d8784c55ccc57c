// TODO(owner of src/controlplane/organizations): the routes of this resource.
import { Elysia } from "elysia";
import type { ControlPlaneDeps } from "../deps.ts";

export function organizationRoutes(_deps: ControlPlaneDeps) {
  return new Elysia({ name: "organizations-routes" });
}
