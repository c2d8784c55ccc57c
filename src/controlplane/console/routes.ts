// TODO(owner of src/controlplane/console): the routes of this resource.
import { Elysia } from "elysia";
import type { ControlPlaneDeps } from "../deps.ts";

export function consoleRoutes(_deps: ControlPlaneDeps, _api: (request: Request) => Promise<Response>) {
  return new Elysia({ name: "console-routes" });
}
