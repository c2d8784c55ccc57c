// Organization-scoped admin routes for the organization itself: workspaces and members.
import { Elysia, t } from "elysia";
import { Member, MemberList, Workspace, WorkspaceList } from "../../contract/admin-api.ts";
import { acting } from "../audit/admin-events.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { addMember, listMembers, removeMember } from "./members.ts";
import { MemberCreate, WorkspaceCreate } from "./model.ts";
import { createWorkspace, listWorkspaces } from "./service.ts";
import { NO_CONTENT } from "../http/openapi-complete.ts";

const MemberParams = t.Object({ org: t.String(), account_id: t.String({ minLength: 1, maxLength: 64 }) });

type WorkspaceRow = { id: string; name: string; createdAt: number };

export function presentWorkspace(w: WorkspaceRow) {
  return { id: w.id, name: w.name, created_at: new Date(w.createdAt).toISOString() };
}

export function organizationRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "organizations-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .get("/workspaces", async ({ principal }) => ({ workspaces: (await listWorkspaces(deps.db, principal.orgId)).map(presentWorkspace) }), {
      admin: true,
      response: WorkspaceList,
      detail: { tags: ["organizations"], summary: "List workspaces" },
    })
    .post(
      "/workspaces",
      async ({ principal, body, set }) => {
        const created = await createWorkspace(deps.db, principal.orgId, body.name, acting(deps, principal));
        set.status = 201;
        return presentWorkspace(created);
      },
      { admin: true, body: WorkspaceCreate, response: { 201: Workspace }, detail: { tags: ["organizations"], summary: "Create a workspace" } },
    )
    .get("/members", async ({ principal }) => ({ members: await listMembers(deps.db, principal.orgId) }), {
      admin: true,
      response: MemberList,
      detail: { tags: ["organizations"], summary: "List members and their roles" },
    })
    .post(
      "/members",
      async ({ principal, body, set }) => {
        const member = await addMember(deps.db, principal, body, deps.now());
        set.status = 201;
        return member;
      },
      {
        admin: true,
        body: MemberCreate,
        response: { 201: Member },
        detail: { tags: ["organizations"], summary: "Add a member (creates the account when new) or change a role; making a member owner ends its sessions and API tokens here" },
      },
    )
    .delete(
      "/members/:account_id",
      async ({ principal, params, set }) => {
        await removeMember(deps.db, principal, params.account_id, deps.now());
        set.status = 204;
      },
      { admin: true, params: MemberParams, detail: { tags: ["organizations"], summary: "Remove a member: ends its sessions and revokes its API tokens in this organization", responses: NO_CONTENT } },
    );
}
