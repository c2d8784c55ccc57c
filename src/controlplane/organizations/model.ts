// Request schemas of the organization routes: workspaces and members.
import { t } from "elysia";

export const WorkspaceCreate = t.Object({ name: t.String({ minLength: 1, maxLength: 63 }) });

export const Role = t.Union([t.Literal("owner"), t.Literal("admin"), t.Literal("member")]);

export const MemberCreate = t.Object({
  email: t.String({ minLength: 3, maxLength: 320 }),
  role: Role,
  password: t.Optional(t.String({ minLength: 1, maxLength: 1024 })),
});
