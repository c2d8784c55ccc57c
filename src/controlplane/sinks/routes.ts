// SIEM sink routes: the admin API under /organizations/{org}/siem-sinks (`svc audit sinks
// create|list|update|delete`, the console's SIEM page). Owners and admins only. The secret is taken
// on create and never returned (only `secret_set`).
import { Deleted, Sink, SinkList } from "../../contract/admin-api.ts";
import { Elysia, t } from "elysia";
import { acting } from "../audit/admin-events.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { changeSinkFormat, createSink, deleteSink, sinkView, sinkViews } from "./service.ts";

const tags = ["siem-sinks"];

const Format = t.Union([t.Literal("svc"), t.Literal("ocsf"), t.Literal("ecs")], {
  description: "what each event is: svc's record as stored (default), an OCSF 1.8.0 event or an ECS 9.4.0 document (docs/siem.md)",
});

export const SinkCreate = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 100 }),
    kind: t.Union([t.Literal("webhook"), t.Literal("syslog"), t.Literal("otlp")]),
    endpoint: t.String({ minLength: 1, maxLength: 2000, description: "webhook/otlp: https URL (http only to loopback); syslog: host:port of a TLS listener" }),
    secret: t.Optional(t.String({ minLength: 1, maxLength: 4096, description: "webhook: HMAC-SHA256 key (required); otlp: bearer token; write-only" })),
    format: t.Optional(Format),
    include_ciphertext: t.Optional(t.Boolean({ description: "send each record's age ciphertext (base64); default digest-only fields" })),
    backfill: t.Optional(t.Boolean({ description: "deliver the records already stored too; default only those received from now on" })),
    ca_pem: t.Optional(t.String({ minLength: 1, maxLength: 20_000, description: "PEM of the CA that signed the receiver's certificate" })),
    server_name: t.Optional(t.String({ minLength: 1, maxLength: 253, description: "syslog: the name checked in the receiver's certificate" })),
  },
  { additionalProperties: false },
);

export const SinkUpdate = t.Object({ format: Format }, { additionalProperties: false });

export function sinkRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "siem-sink-routes" })
    .use(authPlugin(deps))
    .get("/organizations/:org/siem-sinks", async ({ principal }) => ({ sinks: await sinkViews(deps.db, principal.orgId, deps.now()) }), {
      admin: true,
      response: SinkList,
      detail: { tags, summary: "SIEM sinks with their delivery health and lag" },
    })
    .post(
      "/organizations/:org/siem-sinks",
      async ({ principal, body, set }) => {
        const row = await createSink(deps, principal.orgId, body, acting(deps, principal));
        deps.log.info("siem sink created", { org_id: principal.orgId, sink_id: row.id, kind: row.kind });
        set.status = 201;
        return sinkView(deps.db, row, deps.now());
      },
      { admin: true, body: SinkCreate, response: { 201: Sink }, detail: { tags, summary: "Create a SIEM sink (webhook, syslog over TLS, OTLP/HTTP logs)" } },
    )
    .patch(
      "/organizations/:org/siem-sinks/:id",
      async ({ principal, params, body }) => {
        const row = await changeSinkFormat(deps, principal.orgId, params.id, body.format, acting(deps, principal));
        deps.log.info("siem sink format changed", { org_id: principal.orgId, sink_id: row.id, format: body.format });
        return sinkView(deps.db, row, deps.now());
      },
      {
        admin: true,
        params: t.Object({ org: t.String(), id: t.String({ minLength: 1, maxLength: 200 }) }),
        body: SinkUpdate,
        response: Sink,
        detail: { tags, summary: "Change a SIEM sink's event format (from its next batch on; admin-trailed)" },
      },
    )
    .delete(
      "/organizations/:org/siem-sinks/:id",
      async ({ principal, params }) => {
        const row = await deleteSink(deps, principal.orgId, params.id, acting(deps, principal));
        deps.log.info("siem sink deleted", { org_id: principal.orgId, sink_id: row.id });
        return { deleted: row.id, name: row.name };
      },
      { admin: true, params: t.Object({ org: t.String(), id: t.String({ minLength: 1, maxLength: 200 }) }), response: Deleted, detail: { tags, summary: "Delete a SIEM sink by id or name" } },
    );
}
