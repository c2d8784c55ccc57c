// POST /organizations/:org/invites: a one-time link for a chat user without a console account
// to set a chat password (`svc users invite <email>`); the console's /invite/<token> page uses it.
import { Elysia, t } from "elysia";
import { Invite } from "../../contract/admin-directory.ts";
import { acting } from "../audit/admin-events.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { createInvite } from "./service.ts";

const InviteCreate = t.Object({ email: t.String({ minLength: 3, maxLength: 320 }) });

export function inviteRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "invite-routes", prefix: "/organizations/:org" }).use(authPlugin(deps)).post(
    "/invites",
    async ({ principal, body, set }) => {
      const out = await createInvite(deps, principal.orgId, body.email, acting(deps, principal));
      set.status = 201;
      return out;
    },
    {
      admin: true,
      body: InviteCreate,
      response: { 201: Invite },
      detail: {
        tags: ["directory"],
        summary: "Invite a chat user without a console account: a one-time link to set a chat password, which only redeems claim links (no console access)",
      },
    },
  );
}
