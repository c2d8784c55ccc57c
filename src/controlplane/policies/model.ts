// Request schemas of the policy routes.
import { t } from "elysia";

export const PolicyCreate = t.Object({
  name: t.String({ minLength: 1, maxLength: 200 }),
  src: t.String({ maxLength: 500, description: "user:<id> | group:<name> | *" }),
  dst: t.String({ maxLength: 500, description: "model:invoke | tool:<name>" }),
  effect: t.Union([t.Literal("permit"), t.Literal("deny")]),
  workspace: t.String({ minLength: 1, maxLength: 100 }),
  agent_id: t.Optional(t.String({ minLength: 1, maxLength: 64 })),
});

export const PolicyQuery = t.Object({ workspace: t.Optional(t.String({ maxLength: 100 })), agent_id: t.Optional(t.String({ maxLength: 64 })) });
export const PolicyParams = t.Object({ org: t.String(), id: t.String({ maxLength: 64 }) });
