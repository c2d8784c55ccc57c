// Admin answers about agents and policies (`svc policies …`, `svc bot agents list`, the
// console's agents and policies pages). See admin-api.ts.
import { type Static, Type } from "@sinclair/typebox";
import { Nullable, Time, listOf, open } from "./admin-shape.ts";

/** An agent (…/agents, …/installations/{id}/agents). */
export const Agent = open({ id: Type.String(), name: Type.String(), description: Nullable(Type.String()), workspace_id: Type.String(), created_at: Time });
export type Agent = Static<typeof Agent>;
export const AgentList = listOf("agents", Agent);

const Effect = Type.Union([Type.Literal("permit"), Type.Literal("deny")]);
const Mode = Type.Union([Type.Literal("enforce"), Type.Literal("shadow")]);

/** A policy as stored (…/policies). */
export const Policy = open({
  id: Type.String(),
  name: Type.String(),
  src: Type.String(),
  dst: Type.String(),
  effect: Effect,
  condition: Nullable(Type.String()),
  mode: Mode,
  /** null: every agent of the workspace. */
  agent_id: Nullable(Type.String()),
  workspace_id: Type.String(),
  created_at: Time,
});
export type Policy = Static<typeof Policy>;
export const PolicyList = listOf("policies", Policy);

/** A policy just created or changed, with the tools its dst names that no installation registered. */
export const PolicyWritten = Type.Composite([Policy, open({ warnings: Type.Array(Type.String()) })], { additionalProperties: true });
export type PolicyWritten = Static<typeof PolicyWritten>;

/** What `policies/apply` does or would do (dry run), matched by name. */
export const PolicyPlan = open({
  create: Type.Array(open({ name: Type.String() })),
  update: Type.Array(open({ id: Type.String(), name: Type.String(), changes: Type.Array(Type.String()) })),
  delete: Type.Array(open({ id: Type.String(), name: Type.String() })),
});
export type PolicyPlan = Static<typeof PolicyPlan>;
export const PolicyApplyResult = open({ plan: PolicyPlan, applied: Type.Boolean(), warnings: Type.Array(Type.String()) });
export type PolicyApplyResult = Static<typeof PolicyApplyResult>;
