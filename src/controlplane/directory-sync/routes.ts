// Directory sync routes (docs/api.md, docs/directory-sync.md), owner or admin only:
//   PUT  /organizations/{org}/directory-sync          set the configuration (secret write-only)
//   POST /organizations/{org}/directory-sync/enable   enable; a run starts now, then periodically
//   POST /organizations/{org}/directory-sync/disable  stop the periodic runs
//   POST /organizations/{org}/directory-sync/run      run now and answer with the report
//   GET  /organizations/{org}/directory-sync          the configuration
//   GET  /organizations/{org}/directory-sync/report   the last run
import { DirectorySyncConfig, DirectorySyncReport } from "../../contract/admin-api.ts";
import { loggableError } from "../db/errors.ts";
import { Elysia, t } from "elysia";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { acting } from "../audit/admin-events.ts";
import { MAX_INTERVAL_SECONDS, MIN_INTERVAL_SECONDS, readConfig, setConfig, setEnabled } from "./config.ts";
import { lastReport, runSync, startSync } from "./service.ts";

const ConfigBody = t.Object({
  tenant_id: t.String({ minLength: 1, maxLength: 256 }),
  client_id: t.String({ minLength: 1, maxLength: 64 }),
  app_id: t.String({ minLength: 1, maxLength: 64 }),
  client_secret: t.Optional(t.String({ minLength: 1, maxLength: 4096 })),
  dry_run: t.Boolean(),
  create_users: t.Boolean(),
  authority_url: t.Optional(t.String({ maxLength: 2048 })),
  graph_url: t.Optional(t.String({ maxLength: 2048 })),
  interval_seconds: t.Optional(t.Integer({ minimum: MIN_INTERVAL_SECONDS, maximum: MAX_INTERVAL_SECONDS })),
});

export function directorySyncRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "directory-sync-routes", prefix: "/organizations/:org/directory-sync" })
    .use(authPlugin(deps))
    .put("", async ({ principal, body }) => setConfig(deps, principal.orgId, body, acting(deps, principal)), { admin: true, body: ConfigBody, response: DirectorySyncConfig })
    .get("", async ({ params }) => readConfig(deps.db, params.org), { admin: true, response: DirectorySyncConfig })
    .post(
      "/enable",
      async ({ principal }) => {
        const by = acting(deps, principal);
        const config = await setEnabled(deps, principal.orgId, true, by);
        // Its "running" record is written before the answer; the outcome is read with GET …/report.
        await startSync(deps, principal.orgId, by).catch((e) => deps.log.error("directory sync run failed to start", { org_id: principal.orgId, error: loggableError(e) }));
        return config;
      },
      { admin: true, response: DirectorySyncConfig },
    )
    .post("/disable", async ({ principal }) => setEnabled(deps, principal.orgId, false, acting(deps, principal)), { admin: true, response: DirectorySyncConfig })
    .post("/run", async ({ principal, body }) => runSync(deps, principal.orgId, acting(deps, principal), body?.dry_run === undefined ? {} : { dryRun: body.dry_run }), {
      admin: true,
      body: t.Optional(t.Object({ dry_run: t.Optional(t.Boolean()) })),
      response: DirectorySyncReport,
    })
    .get("/report", async ({ params }) => lastReport(deps.db, params.org), { admin: true, response: DirectorySyncReport });
}
