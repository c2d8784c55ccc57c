// Request schemas of the policy routes.
import { t } from "elysia";
import { CONDITION_MAX_LENGTH } from "../../contract/conditions.ts";

export const PolicyCreate = t.Object({
  name: t.String({ minLength: 1, maxLength: 200 }),
  src: t.String({ maxLength: 500, description: "user:<id> | group:<name> | *" }),
  dst: t.String({ maxLength: 500, description: "model:invoke | tool:<name>" }),
  effect: t.Union([t.Literal("permit"), t.Literal("deny")]),
  workspace: t.String({ minLength: 1, maxLength: 100 }),
  agent_id: t.Optional(t.String({ minLength: 1, maxLength: 64 })),
  condition: t.Optional(t.Union([t.String({ maxLength: CONDITION_MAX_LENGTH, description: "CEL over args, user, now; type or syntax errors → 422 invalid_condition naming line and column" }), t.Null()])),
  mode: t.Optional(t.Union([t.Literal("enforce"), t.Literal("shadow")], { description: "shadow: evaluated and recorded, never changes the outcome" })),
});

export const PolicyQuery = t.Object({ workspace: t.Optional(t.String({ maxLength: 100 })), agent_id: t.Optional(t.String({ maxLength: 64 })) });
export const PolicyParams = t.Object({ org: t.String(), id: t.String({ maxLength: 64 }) });
