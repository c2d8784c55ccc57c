// Request schemas of the users, groups and remote-identity routes.
import { t } from "elysia";

export const UserCreate = t.Object({
  email: t.String({ minLength: 3, maxLength: 320 }),
  display_name: t.Optional(t.String({ maxLength: 200 })),
});
export const UserQuery = t.Object({ email: t.Optional(t.String({ maxLength: 320 })) });
export const IdParams = t.Object({ org: t.String(), id: t.String({ minLength: 1, maxLength: 320 }) });
export const MemberParams = t.Object({ org: t.String(), id: t.String({ minLength: 1, maxLength: 200 }), user_id: t.String({ minLength: 1, maxLength: 320 }) });

export const RemoteIdentityLink = t.Object({
  // A plain string, so anything but "chatui" gets the dedicated invalid_platform refusal.
  platform: t.String({ maxLength: 100 }),
  remote_user_id: t.String({ minLength: 1, maxLength: 200 }),
  relink: t.Optional(t.Boolean({ description: "move a link that points at another user" })),
});
export const RemoteIdentityParams = t.Object({ org: t.String(), id: t.String({ minLength: 1, maxLength: 320 }), remote_user_id: t.String({ minLength: 1, maxLength: 200 }) });
export const RemoteIdentityQuery = t.Object({ linked: t.Optional(t.Boolean()) });

export const GroupCreate = t.Object({ name: t.String({ minLength: 1, maxLength: 200 }) });
export const GroupMemberAdd = t.Object({ user_id: t.String({ minLength: 1, maxLength: 320 }) });
