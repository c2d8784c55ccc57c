// TODO(owner of src/controlplane/directory-sync): the routes of this resource.
import { Elysia } from "elysia";
import type { ControlPlaneDeps } from "../deps.ts";

export function directorySyncRoutes(_deps: ControlPlaneDeps) {
  return new Elysia({ name: "directory-sync-routes" });
}
