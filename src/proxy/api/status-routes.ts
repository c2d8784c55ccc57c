// The routes that report rather than decide: readiness, the models this user may call, and
// the policy status `svc policy show` prints.
import { visibleModels } from "../policy/policy-index.ts";
import type { Route, RouteContext } from "./routes.ts";

/** The one route that needs no token. */
export const READYZ_PATH = "/readyz";

export function statusRoutes(c: RouteContext): Route[] {
  return [
    {
      method: "GET",
      path: READYZ_PATH,
      public: true,
      handler: async () => {
        const r = c.status.readiness();
        return Response.json(r, { status: r.ready ? 200 : 503 });
      },
    },
    {
      method: "GET",
      path: "/v1/models",
      handler: async (_req, user) => {
        const compiled = c.status.serving() ? c.status.compiled : null;
        const visible = compiled ? visibleModels(compiled, user, c.now()) : null;
        const created = compiled ? Math.floor(Date.parse(compiled.bundle.generated_at) / 1000) || 0 : 0;
        return Response.json({
          object: "list",
          data: (visible?.models ?? []).map((id) => ({ id, object: "model", created, owned_by: "svc", name: id, profile: visible!.profile.display_name })),
        });
      },
    },
    { method: "GET", path: "/v1/policy", handler: async () => Response.json(c.status.report(c.spoolDepth())) },
  ];
}
