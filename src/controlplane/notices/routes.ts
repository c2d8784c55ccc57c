// Admin notices under /organizations/{org}/notices: the caller's open notices, and dismissing
// one for themselves (service.ts).
import { Elysia, t } from "elysia";
import { NoticeList } from "../../contract/admin-api.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { NO_CONTENT } from "../http/openapi-complete.ts";
import { dismissNotice, openNotices } from "./service.ts";

const tags = ["notices"];
const Params = t.Object({ org: t.String(), id: t.String({ minLength: 1, maxLength: 64 }) });

export function noticeRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "notice-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .get("/notices", async ({ principal }) => ({ notices: await openNotices(deps.db, principal.orgId, principal.accountId) }), {
      admin: true,
      response: NoticeList,
      detail: { tags, summary: "Notices for the caller: escrow recovery steps and rule changes by others, newest first, until the caller dismisses them" },
    })
    .post(
      "/notices/:id/dismiss",
      async ({ principal, params, set }) => {
        await dismissNotice(deps.db, principal.orgId, principal.accountId, params.id, deps.now());
        set.status = 204;
      },
      { admin: true, params: Params, detail: { tags, summary: "Dismiss a notice for the caller alone (the other owners and admins still see it)", responses: NO_CONTENT } },
    );
}
