// TODO(owner of src/controlplane/auth): the routes of this resource.
import { Elysia } from "elysia";
import type { ControlPlaneDeps } from "../deps.ts";

export function authRoutes(_deps: ControlPlaneDeps) {
  return new Elysia({ name: "auth-routes" });
}
