// TODO(owner of src/controlplane/model-profiles): the routes of this resource.
import { Elysia } from "elysia";
import type { ControlPlaneDeps } from "../deps.ts";

export function modelProfileRoutes(_deps: ControlPlaneDeps) {
  return new Elysia({ name: "model-profiles-routes" });
}
