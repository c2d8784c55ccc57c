// The control plane's HTTP application: problem+json errors, the OpenAPI document, and one
// module per resource folder. Admin routes live under /api/v1/organizations/{org}/…, the
// runtime API under /api/v1/runtime/…, the console at /.
import { openapi } from "@elysiajs/openapi";
import { Elysia } from "elysia";
import { agentRoutes } from "./agents/routes.ts";
import { auditChainRoutes } from "./audit-chain/routes.ts";
import { auditKeyRoutes } from "./audit-keys/routes.ts";
import { auditRoutes } from "./audit/routes.ts";
import { authRoutes } from "./auth/routes.ts";
import { claimRoutes } from "./claims/routes.ts";
import { consoleRoutes } from "./console/routes.ts";
import { SvcError } from "../contract/errors.ts";
import { tables } from "./db/index.ts";
import type { ControlPlaneDeps } from "./deps.ts";
import { directorySyncRoutes } from "./directory-sync/routes.ts";
import { directoryRoutes } from "./directory/routes.ts";
import { loggablePath } from "./http/log-path.ts";
import { nulGuard } from "./http/nul-guard.ts";
import { problemPlugin } from "./http/problem.ts";
import { installationRoutes } from "./installations/routes.ts";
import { ControlPlaneMetrics, metricsPlugin } from "./metrics/index.ts";
import { modelProfileRoutes } from "./model-profiles/routes.ts";
import { organizationRoutes } from "./organizations/routes.ts";
import { policyRoutes } from "./policies/routes.ts";
import { settingsRoutes } from "./organizations/settings.ts";
import { runtimeRoutes } from "./runtime/routes.ts";

export const OPENAPI_PATH = "/api/v1/openapi.json";

/** Ready while the store answers a query: a load balancer's health check for a replica. */
async function storeReady(deps: ControlPlaneDeps): Promise<{ ok: true }> {
  const o = tables(deps.db).organizations;
  try {
    await deps.db.select({ id: o.id }).from(o).limit(1);
  } catch (e) {
    deps.log.error("store unavailable", { error: String(e) });
    throw new SvcError("store_unavailable", "the control plane cannot reach its database; see its log");
  }
  return { ok: true };
}

export function createApp(deps: ControlPlaneDeps) {
  deps.metrics ??= new ControlPlaneMetrics();
  const api = new Elysia({ prefix: "/api/v1" })
    .use(authRoutes(deps))
    .use(organizationRoutes(deps))
    .use(agentRoutes(deps))
    .use(installationRoutes(deps))
    .use(modelProfileRoutes(deps))
    .use(policyRoutes(deps))
    .use(directoryRoutes(deps))
    .use(auditKeyRoutes(deps))
    .use(auditRoutes(deps))
    .use(auditChainRoutes(deps))
    .use(runtimeRoutes(deps))
    .use(claimRoutes(deps))
    .use(directorySyncRoutes(deps))
    .use(settingsRoutes(deps));

  // The console renders pages from the same JSON API the CLI uses, called in-process.
  const handle = (request: Request): Promise<Response> => root.handle(request);
  const root: Elysia = new Elysia()
    .use(problemPlugin(({ path, code, error }) => deps.log.error("request failed", { path: loggablePath(path), code, error: String(error) })))
    .use(nulGuard())
    .use(metricsPlugin(deps.metrics, deps.config.metricsToken))
    .use(
      openapi({
        path: "/api/v1/openapi",
        specPath: OPENAPI_PATH,
        documentation: { info: { title: "svc control plane", version: "1", description: "Admin API, runtime API and claim links. Errors are application/problem+json with a stable `code`." } },
        // The document covers the HTTP API; the console's HTML pages are not part of it.
        exclude: { paths: [/^\/(?!api\/v1\/)/] },
      }),
    )
    .get("/healthz", () => ({ ok: true }))
    .get("/readyz", async () => storeReady(deps))
    .use(api)
    .use(consoleRoutes(deps, handle)) as unknown as Elysia;
  return root;
}

export type App = ReturnType<typeof createApp>;
