// TODO(owner of src/controlplane/audit-keys): the routes of this resource.
import { Elysia } from "elysia";
import type { ControlPlaneDeps } from "../deps.ts";

export function auditKeyRoutes(_deps: ControlPlaneDeps) {
  return new Elysia({ name: "audit-keys-routes" });
}
