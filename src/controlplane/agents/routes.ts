// TODO(owner of src/controlplane/agents): the routes of this resource.
import { Elysia } from "elysia";
import type { ControlPlaneDeps } from "../deps.ts";

export function agentRoutes(_deps: ControlPlaneDeps) {
  return new Elysia({ name: "agents-routes" });
}
