// Admin audit view under /organizations/{org}/audit-records: search, one record, the
// ciphertext as a binary age file, export, and the activity figures of the console's overview. The runtime's ingest route lives in runtime/routes.ts.
import { Activity, AuditRecordPage, AuditRecordView, RetentionRun, UsageReport, UsageSeries } from "../../contract/admin-api.ts";
import { Elysia, t } from "elysia";
import { acting } from "./admin-events.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { SvcError } from "../../contract/errors.ts";
import { auditActivity } from "./activity.ts";
import { exportText } from "./export.ts";
import { latestRetentionRun, startRetentionRun } from "./retention-runs.ts";
import { MAX_LIMIT, getRecord, recordCiphertext, searchRecords } from "./query.ts";
import { parseSince, usageBy, usageSeries } from "./usage.ts";
import { CIPHERTEXT_RESPONSES, EXPORT_RESPONSES } from "../http/openapi-complete.ts";
import { textBody } from "../http/text-body.ts";

const UsageQuery = t.Object({
  by: t.Union([t.Literal("user"), t.Literal("group"), t.Literal("model"), t.Literal("agent")]),
  since: t.Optional(t.String({ maxLength: 40, description: "7d, 24h, 30m or an ISO 8601 time; default 30d" })),
  until: t.Optional(t.String({ maxLength: 40, description: "ISO 8601, exclusive" })),
});
const SeriesQuery = t.Object({
  by: t.Union([t.Literal("user"), t.Literal("model")]),
  bucket: t.Optional(t.Union([t.Literal("day"), t.Literal("hour")])),
  since: t.Optional(t.String({ maxLength: 40 })),
});

const Filters = {
  tool: t.Optional(t.String({ maxLength: 200, description: "tool name prefix, or a glob with * and ?" })),
  decision: t.Optional(t.Union([t.Literal("permit"), t.Literal("deny"), t.Literal("ask")])),
  user: t.Optional(t.String({ maxLength: 320, description: "user id (usr_…) or email" })),
  installation: t.Optional(t.String({ maxLength: 100 })),
  kind: t.Optional(
    t.Union([t.Literal("tool"), t.Literal("model"), t.Literal("outcome"), t.Literal("admin"), t.Literal("runtime")], {
      description: "admin: the control plane's own events (the admin trail: every change to the admin plane and every refusal); runtime: every kind but admin",
    }),
  ),
  actor: t.Optional(t.String({ minLength: 1, maxLength: 320, description: "admin events of this actor: account id (acc_…), email, system:<component> or anonymous" })),
  action: t.Optional(t.String({ minLength: 1, maxLength: 100, description: "admin events of this action (policy.update), or of a prefix ending in * (policy.*)" })),
  result: t.Optional(t.Union([t.Literal("ok"), t.Literal("refused")], { description: "admin events carried out (ok) or refused" })),
  background: t.Optional(t.Union([t.Literal("hide"), t.Literal("only")], { description: "Open WebUI's background tasks (titles, tags, follow-ups): hide them, or show only them" })),
  policy: t.Optional(t.String({ maxLength: 64, description: "records this policy decided or, as a shadow policy, would have decided" })),
  shadow: t.Optional(t.Literal("changed", { description: "only records a shadow policy would have decided differently" })),
  args_digest: t.Optional(t.String({ maxLength: 100, pattern: "^hmac-sha256:[0-9a-f]{64}$", description: "calls with the same arguments: this digest (hmac-sha256:…)" })),
  digest_key_id: t.Optional(t.String({ maxLength: 64, description: "records whose digest was made with this digest key (dk_…)" })),
  from: t.Optional(t.String({ maxLength: 40, description: "ISO 8601, inclusive" })),
  to: t.Optional(t.String({ maxLength: 40, description: "ISO 8601, inclusive" })),
  since: t.Optional(t.String({ maxLength: 40, description: "7d, 24h, 30m or ISO 8601, inclusive" })),
  until: t.Optional(t.String({ maxLength: 40, description: "7d, 24h, 30m or ISO 8601, exclusive" })),
};
const SearchQuery = t.Object({
  ...Filters,
  view: t.Optional(
    t.Union([t.Literal("calls"), t.Literal("records")], { description: "calls: one entry per call, the decision with its outcome (call_outcome); records (default): every record, outcomes too" }),
  ),
  cursor: t.Optional(t.String({ maxLength: 200 })),
  limit: t.Optional(t.Numeric({ minimum: 1, maximum: MAX_LIMIT })),
});
const ExportQuery = t.Object({
  ...Filters,
  format: t.Optional(
    t.Union([t.Literal("jsonl"), t.Literal("csv"), t.Literal("ocsf"), t.Literal("ecs")], {
      description: "jsonl: the records as stored (default); csv; ocsf: OCSF 1.8.0 events, ecs: ECS 9.4.0 documents, one per line (docs/siem.md)",
    }),
  ),
  order: t.Optional(t.Union([t.Literal("id"), t.Literal("chain")], { description: "id: oldest first (default); chain: chain by chain in number order, what `svc audit verify` reads" })),
});

const MAX_ACTIVITY_MS = 7 * 86_400_000;

export function auditRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "audit-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .post(
      "/audit-retention/run",
      async ({ principal, set }) => {
        set.status = 202;
        return startRetentionRun(deps, principal.orgId, acting(deps, principal));
      },
      {
        admin: true,
        response: { 202: RetentionRun },
        detail: {
          summary:
            "Start deleting the records older than the retention period now (besides the hourly run), in the background in batches; answers at once with the run (or the one already running); signs a checkpoint with the new chain floors when done",
          tags: ["audit"],
        },
      },
    )
    .get("/audit-retention/run", async ({ principal }) => latestRetentionRun(deps, principal.orgId), {
      admin: true,
      response: RetentionRun,
      detail: { summary: "The latest retention run: running (with the records deleted so far), done, failed or interrupted", tags: ["audit"] },
    })
    .get("/audit-records", async ({ principal, query }) => searchRecords(deps.db, principal.orgId, query, deps.now()), {
      admin: true,
      query: SearchQuery,
      response: AuditRecordPage,
      detail: { summary: "Search audit records, newest first (never ciphertext)", tags: ["audit"] },
    })
    .get(
      "/usage",
      async ({ principal, query }) => {
        const since = parseSince(query.since ?? "30d", deps.now());
        const until = query.until ? parseSince(query.until, deps.now()) : null;
        return {
          by: query.by,
          since: new Date(since).toISOString(),
          until: until === null ? null : new Date(until).toISOString(),
          rows: await usageBy(deps.db, principal.orgId, query.by, { since, until }),
        };
      },
      { admin: true, query: UsageQuery, response: UsageReport, detail: { summary: "Model usage (tokens, cost) by user, group, model or agent", tags: ["usage"] } },
    )
    .get(
      "/usage/series",
      async ({ principal, query }) => ({ points: await usageSeries(deps.db, principal.orgId, query.by, query.bucket ?? "day", { since: parseSince(query.since ?? "30d", deps.now()) }) }),
      { admin: true, query: SeriesQuery, response: UsageSeries, detail: { summary: "Model usage over time, per user or model", tags: ["usage"] } },
    )
    .get(
      "/audit-activity",
      async ({ principal, query }) => {
        const now = deps.now();
        const since = parseSince(query.since ?? "24h", now);
        if (since < now - MAX_ACTIVITY_MS || since >= now) throw new SvcError("validation_failed", `since="${query.since}" must be within the last 7 days`);
        return auditActivity(deps.db, principal.orgId, since, now);
      },
      {
        admin: true,
        query: t.Object({ since: t.Optional(t.String({ maxLength: 40, description: "24h (default), 7d, 30m or ISO 8601; at most 7 days back" })) }),
        response: Activity,
        detail: { summary: "Decisions per hour, top tools and top users (background tasks and outcomes left out)", tags: ["audit"] },
      },
    )
    .get(
      "/audit-records/export",
      async ({ principal, query }) => {
        const format = query.format ?? "jsonl";
        const { format: _, order, ...filters } = query;
        return new Response(textBody(await exportText(deps.db, principal.orgId, filters, format, deps.now(), order ?? "id")), {
          headers: {
            "content-type": format === "csv" ? "text/csv; charset=utf-8" : "application/x-ndjson",
            "content-disposition": `attachment; filename="audit-records.${format === "ocsf" || format === "ecs" ? `${format}.jsonl` : format}"`,
            "cache-control": "no-store",
          },
        });
      },
      {
        admin: true,
        query: ExportQuery,
        detail: { summary: "Every matching record, oldest first, streamed as JSON lines, CSV, OCSF or ECS (never ciphertext)", tags: ["audit"], responses: EXPORT_RESPONSES },
      },
    )
    .get("/audit-records/:id", async ({ principal, params }) => getRecord(deps.db, principal.orgId, params.id), {
      admin: true,
      response: AuditRecordView,
      detail: { summary: "One audit record", tags: ["audit"] },
    })
    .get(
      "/audit-records/:id/ciphertext",
      async ({ principal, params }) =>
        new Response(await recordCiphertext(deps.db, principal.orgId, params.id), {
          headers: {
            "content-type": "application/octet-stream",
            "content-disposition": `attachment; filename="${params.id}.age"`,
            "cache-control": "no-store",
          },
        }),
      { admin: true, detail: { summary: "The record's arguments as a binary age file, for `svc audit decrypt`", tags: ["audit"], responses: CIPHERTEXT_RESPONSES } },
    );
}
