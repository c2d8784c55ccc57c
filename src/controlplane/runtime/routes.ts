// TODO(owner of src/controlplane/runtime): the routes of this resource.
import { Elysia } from "elysia";
import type { ControlPlaneDeps } from "../deps.ts";

export function runtimeRoutes(_deps: ControlPlaneDeps) {
  return new Elysia({ name: "runtime-routes" });
}
