// Request schemas of the agent routes.
import { t } from "elysia";

export const AgentCreate = t.Object({
  name: t.String({ minLength: 1, maxLength: 200 }),
  workspace: t.String({ minLength: 1, maxLength: 100 }),
  description: t.Optional(t.String({ maxLength: 2000 })),
});

export const WorkspaceQuery = t.Object({ workspace: t.Optional(t.String({ maxLength: 100 })) });
/** Path parameters under /organizations/:org; `org` is declared so validation keeps it for the auth check. */
export const IdParams = t.Object({ org: t.String(), id: t.String({ maxLength: 200 }) });
