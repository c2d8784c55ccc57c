// TODO(owner of src/controlplane/directory): the routes of this resource.
import { Elysia } from "elysia";
import type { ControlPlaneDeps } from "../deps.ts";

export function directoryRoutes(_deps: ControlPlaneDeps) {
  return new Elysia({ name: "directory-routes" });
}
