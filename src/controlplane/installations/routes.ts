// TODO(owner of src/controlplane/installations): the routes of this resource.
import { Elysia } from "elysia";
import type { ControlPlaneDeps } from "../deps.ts";

export function installationRoutes(_deps: ControlPlaneDeps) {
  return new Elysia({ name: "installations-routes" });
}
