// Users (keyed by email), groups and their members, and front-end identities linked to users:
// `svc users resolve|remote-identities list`. Changes that reach bundles bump the revision.
import { Elysia } from "elysia";
import { Group, GroupList, RemoteIdentity, RemoteIdentityList, User, UserList } from "../../contract/admin-directory.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { GroupCreate, GroupMemberAdd, IdParams, MemberParams, RemoteIdentityLink, RemoteIdentityParams, RemoteIdentityQuery, UserCreate, UserQuery } from "./model.ts";
import { acting } from "../audit/admin-events.ts";
import { addGroupMemberByHand, createGroup, createUser, linkByHand, removeGroupMemberByHand, setUserDisabledByHand, unlinkByHand } from "./by-hand.ts";
import { listGroups, listRemoteIdentities, listUsers, remoteIdentitiesOfUser, showUser } from "./service.ts";
import { NO_CONTENT } from "../http/openapi-complete.ts";

const tags = ["directory"];

export function directoryRoutes(deps: ControlPlaneDeps) {
  const db = deps.db;
  return new Elysia({ name: "directory-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .get("/users", async ({ principal, query }) => ({ users: await listUsers(db, principal.orgId, query.email) }), {
      admin: true,
      query: UserQuery,
      response: UserList,
      detail: { tags, summary: "List users, or resolve one by ?email=" },
    })
    .post(
      "/users",
      async ({ principal, body, set }) => {
        const user = await createUser(db, principal.orgId, { email: body.email, displayName: body.display_name ?? null }, acting(deps, principal));
        set.status = 201;
        return user;
      },
      { admin: true, body: UserCreate, response: { 201: User }, detail: { tags, summary: "Create a user" } },
    )
    .get("/users/:id", async ({ principal, params }) => showUser(db, principal.orgId, params.id), {
      admin: true,
      params: IdParams,
      response: User,
      detail: { tags, summary: "Show a user by id or email" },
    })
    .post("/users/:id/disable", async ({ principal, params }) => setUserDisabledByHand(db, principal.orgId, params.id, true, acting(deps, principal)), {
      admin: true,
      params: IdParams,
      response: User,
      detail: { tags, summary: "Disable a user: its front-end identities leave the identity map (decided as unlinked)" },
    })
    .post("/users/:id/enable", async ({ principal, params }) => setUserDisabledByHand(db, principal.orgId, params.id, false, acting(deps, principal)), {
      admin: true,
      params: IdParams,
      response: User,
      detail: { tags, summary: "Enable a disabled user again" },
    })
    .get("/users/:id/remote-identities", async ({ principal, params }) => ({ remote_identities: await remoteIdentitiesOfUser(db, principal.orgId, params.id) }), {
      admin: true,
      params: IdParams,
      response: RemoteIdentityList,
      detail: { tags, summary: "Front-end identities linked to the user" },
    })
    .post(
      "/users/:id/remote-identities",
      async ({ principal, params, body, set }) => {
        const link = await linkByHand(db, principal.orgId, params.id, { platform: body.platform, remoteUserId: body.remote_user_id, relink: body.relink ?? false }, acting(deps, principal));
        set.status = 201;
        return link;
      },
      { admin: true, params: IdParams, body: RemoteIdentityLink, response: { 201: RemoteIdentity }, detail: { tags, summary: "Link a front-end user to this user by hand" } },
    )
    .delete("/users/:id/remote-identities/:remote_user_id", async ({ principal, params }) => unlinkByHand(db, principal.orgId, params.id, params.remote_user_id, acting(deps, principal)), {
      admin: true,
      params: RemoteIdentityParams,
      response: RemoteIdentity,
      detail: { tags, summary: "Unlink a front-end user from this user (decided as unlinked from the next bundle; 404 when not linked to it)" },
    })
    .get("/remote-identities", async ({ principal, query }) => ({ remote_identities: await listRemoteIdentities(db, principal.orgId, query.linked) }), {
      admin: true,
      query: RemoteIdentityQuery,
      response: RemoteIdentityList,
      detail: { tags, summary: "Front-end identities of the organization (?linked=true|false)" },
    })
    .get("/groups", async ({ principal }) => ({ groups: await listGroups(db, principal.orgId) }), {
      admin: true,
      response: GroupList,
      detail: { tags, summary: "List groups with member counts" },
    })
    .post(
      "/groups",
      async ({ principal, body, set }) => {
        const group = await createGroup(db, principal.orgId, body.name, acting(deps, principal));
        set.status = 201;
        return group;
      },
      { admin: true, body: GroupCreate, response: { 201: Group }, detail: { tags, summary: "Create a group (policy subject group:<name>)" } },
    )
    .post(
      "/groups/:id/members",
      async ({ principal, params, body, set }) => {
        await addGroupMemberByHand(db, principal.orgId, params.id, body.user_id, acting(deps, principal));
        set.status = 204;
      },
      { admin: true, params: IdParams, body: GroupMemberAdd, detail: { tags, summary: "Add a user to a group", responses: NO_CONTENT } },
    )
    .delete(
      "/groups/:id/members/:user_id",
      async ({ principal, params, set }) => {
        await removeGroupMemberByHand(db, principal.orgId, params.id, params.user_id, acting(deps, principal));
        set.status = 204;
      },
      { admin: true, params: MemberParams, detail: { tags, summary: "Remove a user from a group", responses: NO_CONTENT } },
    );
}
