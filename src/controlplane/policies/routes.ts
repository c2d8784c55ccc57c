// TODO(owner of src/controlplane/policies): the routes of this resource.
import { Elysia } from "elysia";
import type { ControlPlaneDeps } from "../deps.ts";

export function policyRoutes(_deps: ControlPlaneDeps) {
  return new Elysia({ name: "policies-routes" });
}
