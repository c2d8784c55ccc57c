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
import { MAX_INTERVAL_SECONDS, MIN_INTERVAL_SECONDS, lastReport, readConfig, runSync, setConfig, setEnabled, startSync } from "./service.ts";

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
    .put("", async ({ params, body }) => setConfig(deps, params.org, body), { admin: true, body: ConfigBody, response: DirectorySyncConfig })
    .get("", async ({ params }) => readConfig(deps.db, params.org), { admin: true, response: DirectorySyncConfig })
    .post(
      "/enable",
      async ({ params }) => {
        const config = await setEnabled(deps, params.org, true);
        // Its "running" record is written before the answer; the outcome is read with GET …/report.
        await startSync(deps, params.org).catch((e) => deps.log.error("directory sync run failed to start", { org_id: params.org, error: loggableError(e) }));
        return config;
      },
      { admin: true, response: DirectorySyncConfig },
    )
    .post("/disable", async ({ params }) => setEnabled(deps, params.org, false), { admin: true, response: DirectorySyncConfig })
    .post("/run", async ({ params, body }) => runSync(deps, params.org, body?.dry_run === undefined ? {} : { dryRun: body.dry_run }), {
      admin: true,
      body: t.Optional(t.Object({ dry_run: t.Optional(t.Boolean()) })),
      response: DirectorySyncReport,
    })
    .get("/report", async ({ params }) => lastReport(deps.db, params.org), { admin: true, response: DirectorySyncReport });
}
