// Admin answers about people: directory users, groups and front-end identities (`svc users …`,
// the console's users, groups and identities pages), the organization's members and API tokens,
// invites, and `svc login`'s device flow. See admin-api.ts.
import { type Static, Type } from "@sinclair/typebox";
import { Nullable, Time, listOf, open } from "./admin-shape.ts";

/** A directory user (…/users): a person policies name, made by hand, by directory sync or by a claim. */
export const User = open({
  id: Type.String(),
  email: Type.String(),
  display_name: Nullable(Type.String()),
  disabled: Type.Boolean(),
  source: Type.Union([Type.Literal("manual"), Type.Literal("directory"), Type.Literal("claim")]),
  /** The names of the user's groups. */
  groups: Type.Array(Type.String()),
  created_at: Time,
});
export type User = Static<typeof User>;
export const UserList = listOf("users", User);

/** A group (…/groups) with its member count. */
export const Group = open({ id: Type.String(), name: Type.String(), source: Type.Union([Type.Literal("manual"), Type.Literal("directory")]), members: Type.Integer(), created_at: Time });
export type Group = Static<typeof Group>;
export const GroupList = listOf("groups", Group);

/** A front-end (chat) account, linked to a user or not (…/remote-identities). */
export const RemoteIdentity = open({
  id: Type.String(),
  platform: Type.String(),
  remote_user_id: Type.String(),
  installation_id: Nullable(Type.String()),
  user_id: Nullable(Type.String()),
  email: Nullable(Type.String()),
  display_name: Nullable(Type.String()),
  linked_at: Nullable(Time),
  created_at: Time,
});
export type RemoteIdentity = Static<typeof RemoteIdentity>;
export const RemoteIdentityList = listOf("remote_identities", RemoteIdentity);

const Role = Type.Union([Type.Literal("owner"), Type.Literal("admin"), Type.Literal("member")]);

/** A member of the organization (…/members): an account with a role. */
export const Member = open({ account_id: Type.String(), email: Type.String(), role: Role });
export type Member = Static<typeof Member>;
export const MemberList = listOf("members", Member);

/** An API token as listed (…/api-tokens): never the token itself. */
export const ApiToken = open({
  id: Type.String(),
  name: Type.String(),
  account_email: Type.String(),
  created_at: Nullable(Time),
  last_used_at: Nullable(Time),
  expires_at: Nullable(Time),
  revoked_at: Nullable(Time),
});
export type ApiToken = Static<typeof ApiToken>;
export const ApiTokenList = listOf("api_tokens", ApiToken);

/** A token just issued: shown this once. */
export const IssuedApiToken = open({ id: Type.String(), token: Type.String(), expires_at: Time });
export type IssuedApiToken = Static<typeof IssuedApiToken>;

/** A one-time link for a chat user to set a chat password (…/invites). */
export const Invite = open({ user_id: Type.String(), email: Type.String(), user_created: Type.Boolean(), url: Type.String(), expires_at: Time });
export type Invite = Static<typeof Invite>;

/** `svc login`'s request, as created (POST /auth/login-requests): the poll secret shown once. */
export const LoginRequest = open({
  id: Type.String(),
  user_code: Type.String(),
  poll_secret: Type.String(),
  approve_url: Type.String(),
  expires_at: Time,
  interval_seconds: Type.Integer(),
});
export type LoginRequest = Static<typeof LoginRequest>;

/** A login request as the console's approval page shows it (GET /auth/login-requests/{id}). */
export const LoginRequestView = open({
  id: Type.String(),
  user_code: Type.String(),
  expires_at: Time,
  status: Type.Union([Type.Literal("pending"), Type.Literal("approved"), Type.Literal("expired")]),
});
export type LoginRequestView = Static<typeof LoginRequestView>;

export const LoginApproved = open({ approved: Type.Literal(true) });

/** The API token a approved login request hands over, once. */
export const LoginToken = open({ token: Type.String(), organization_id: Type.String(), email: Type.String(), expires_at: Time });
export type LoginToken = Static<typeof LoginToken>;

/** A console sign-in: the account, the organization chosen and the CSRF token for the session's writes. */
export const Session = open({
  account: open({ id: Type.String(), email: Type.String() }),
  organization_id: Type.String(),
  role: Role,
  csrf_token: Type.String(),
});
export type Session = Static<typeof Session>;
/** A runtime token, shown once when issued or rotated. */
export const RuntimeCredential = open({ token: Type.String() });
export type RuntimeCredential = Static<typeof RuntimeCredential>;
