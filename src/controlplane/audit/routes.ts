// Admin audit view under /organizations/{org}/audit-records: search, one record, and the
// ciphertext as a binary age file. The runtime's ingest route lives in runtime/routes.ts.
import { Elysia, t } from "elysia";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { MAX_LIMIT, getRecord, recordCiphertext, searchRecords } from "./query.ts";

const SearchQuery = t.Object({
  tool: t.Optional(t.String({ maxLength: 200 })),
  decision: t.Optional(t.Union([t.Literal("permit"), t.Literal("deny"), t.Literal("ask")])),
  user: t.Optional(t.String({ maxLength: 320 })),
  installation: t.Optional(t.String({ maxLength: 100 })),
  kind: t.Optional(t.Union([t.Literal("tool"), t.Literal("model"), t.Literal("outcome")])),
  from: t.Optional(t.String({ maxLength: 40 })),
  to: t.Optional(t.String({ maxLength: 40 })),
  cursor: t.Optional(t.String({ maxLength: 200 })),
  limit: t.Optional(t.Numeric({ minimum: 1, maximum: MAX_LIMIT })),
});

export function auditRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "audit-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .get("/audit-records", async ({ principal, query }) => searchRecords(deps.db, principal.orgId, query), {
      admin: true,
      query: SearchQuery,
      detail: { summary: "Search audit records, newest first (never ciphertext)", tags: ["audit"] },
    })
    .get("/audit-records/:id", async ({ principal, params }) => getRecord(deps.db, principal.orgId, params.id), {
      admin: true,
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
      { admin: true, detail: { summary: "The record's arguments as a binary age file, for `svc audit decrypt`", tags: ["audit"] } },
    );
}
