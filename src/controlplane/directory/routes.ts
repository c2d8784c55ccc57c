// Users (keyed by email), groups and their members, and front-end identities linked to users:
// `svc users resolve|remote-identities list`. Changes that reach bundles bump the revision.
import { Elysia } from "elysia";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { GroupCreate, GroupMemberAdd, IdParams, MemberParams, RemoteIdentityLink, RemoteIdentityQuery, UserCreate, UserQuery } from "./model.ts";
import {
  addGroupMemberByHand,
  createGroup,
  createUser,
  linkByHand,
  listGroups,
  listRemoteIdentities,
  listUsers,
  remoteIdentitiesOfUser,
  removeGroupMemberByHand,
  setUserDisabledByHand,
  showUser,
} from "./service.ts";

const tags = ["directory"];

export function directoryRoutes(deps: ControlPlaneDeps) {
  const db = deps.db;
  return new Elysia({ name: "directory-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .get("/users", ({ principal, query }) => ({ users: listUsers(db, principal.orgId, query.email) }), {
      admin: true,
      query: UserQuery,
      detail: { tags, summary: "List users, or resolve one by ?email=" },
    })
    .post(
      "/users",
      ({ principal, body, set }) => {
        const user = createUser(db, principal.orgId, { email: body.email, displayName: body.display_name ?? null });
        set.status = 201;
        return user;
      },
      { admin: true, body: UserCreate, detail: { tags, summary: "Create a user" } },
    )
    .get("/users/:id", ({ principal, params }) => showUser(db, principal.orgId, params.id), {
      admin: true,
      params: IdParams,
      detail: { tags, summary: "Show a user by id or email" },
    })
    .post("/users/:id/disable", ({ principal, params }) => setUserDisabledByHand(db, principal.orgId, params.id, true), {
      admin: true,
      params: IdParams,
      detail: { tags, summary: "Disable a user: its front-end identities leave the identity map (decided as unlinked)" },
    })
    .post("/users/:id/enable", ({ principal, params }) => setUserDisabledByHand(db, principal.orgId, params.id, false), {
      admin: true,
      params: IdParams,
      detail: { tags, summary: "Enable a disabled user again" },
    })
    .get("/users/:id/remote-identities", ({ principal, params }) => ({ remote_identities: remoteIdentitiesOfUser(db, principal.orgId, params.id) }), {
      admin: true,
      params: IdParams,
      detail: { tags, summary: "Front-end identities linked to the user" },
    })
    .post(
      "/users/:id/remote-identities",
      ({ principal, params, body, set }) => {
        const link = linkByHand(db, principal.orgId, params.id, { platform: body.platform, remoteUserId: body.remote_user_id, relink: body.relink ?? false }, deps.now());
        set.status = 201;
        return link;
      },
      { admin: true, params: IdParams, body: RemoteIdentityLink, detail: { tags, summary: "Link a front-end user to this user by hand" } },
    )
    .get("/remote-identities", ({ principal, query }) => ({ remote_identities: listRemoteIdentities(db, principal.orgId, query.linked) }), {
      admin: true,
      query: RemoteIdentityQuery,
      detail: { tags, summary: "Front-end identities of the organization (?linked=true|false)" },
    })
    .get("/groups", ({ principal }) => ({ groups: listGroups(db, principal.orgId) }), {
      admin: true,
      detail: { tags, summary: "List groups with member counts" },
    })
    .post(
      "/groups",
      ({ principal, body, set }) => {
        const group = createGroup(db, principal.orgId, body.name);
        set.status = 201;
        return group;
      },
      { admin: true, body: GroupCreate, detail: { tags, summary: "Create a group (policy subject group:<name>)" } },
    )
    .post(
      "/groups/:id/members",
      ({ principal, params, body, set }) => {
        addGroupMemberByHand(db, principal.orgId, params.id, body.user_id);
        set.status = 204;
      },
      { admin: true, params: IdParams, body: GroupMemberAdd, detail: { tags, summary: "Add a user to a group" } },
    )
    .delete(
      "/groups/:id/members/:user_id",
      ({ principal, params, set }) => {
        removeGroupMemberByHand(db, principal.orgId, params.id, params.user_id);
        set.status = 204;
      },
      { admin: true, params: MemberParams, detail: { tags, summary: "Remove a user from a group" } },
    );
}
