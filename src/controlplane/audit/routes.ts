// TODO(owner of src/controlplane/audit): the routes of this resource.
import { Elysia } from "elysia";
import type { ControlPlaneDeps } from "../deps.ts";

export function auditRoutes(_deps: ControlPlaneDeps) {
  return new Elysia({ name: "audit-routes" });
}
