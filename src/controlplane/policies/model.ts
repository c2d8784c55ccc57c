// Request schemas of the policy routes.
import { t } from "elysia";
import { CONDITION_MAX_LENGTH } from "../../contract/conditions.ts";

const fields = {
  name: t.String({ minLength: 1, maxLength: 200 }),
  src: t.String({ maxLength: 500, description: "user:<id> | group:<name> | *" }),
  dst: t.String({ maxLength: 500, description: "model:invoke | tool:<name>" }),
  effect: t.Union([t.Literal("permit"), t.Literal("deny")]),
  agent_id: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 64 }), t.Null()])),
  condition: t.Optional(
    t.Union([t.String({ maxLength: CONDITION_MAX_LENGTH, description: "CEL over args, user, now; type or syntax errors → 422 invalid_condition naming line and column" }), t.Null()]),
  ),
  mode: t.Optional(t.Union([t.Literal("enforce"), t.Literal("shadow")], { description: "shadow: evaluated and recorded, never changes the outcome" })),
};
const strict = t.Optional(t.Boolean({ description: "refuse (422 unregistered_tool) a policy naming a tool no installation registered, instead of warning" }));

export const PolicyCreate = t.Object({ ...fields, workspace: t.String({ minLength: 1, maxLength: 100 }), strict });

export const PolicyUpdate = t.Object({
  name: t.Optional(fields.name),
  src: t.Optional(fields.src),
  dst: t.Optional(fields.dst),
  effect: t.Optional(fields.effect),
  agent_id: fields.agent_id,
  condition: fields.condition,
  mode: fields.mode,
  strict,
});

export const PolicyApply = t.Object({
  workspace: t.String({ minLength: 1, maxLength: 100 }),
  // each entry is as strict as the body: an unknown field is refused, never dropped
  policies: t.Array(t.Object(fields, { additionalProperties: false }), { maxItems: 10_000 }),
  dry_run: t.Optional(t.Boolean()),
  strict,
});

export const PolicyQuery = t.Object({ workspace: t.Optional(t.String({ maxLength: 100 })), agent_id: t.Optional(t.String({ maxLength: 64 })) });
export const PolicyParams = t.Object({ org: t.String(), id: t.String({ maxLength: 64 }) });
