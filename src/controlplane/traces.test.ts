// The control plane's spans (issue 35), exported by the OpenTelemetry SDK over OTLP/HTTP to a
// receiver: an ingest batch under the shipper's `traceparent` (counts, never content), and a
// batch delivered to a SIEM sink (its kind, format and count; a failed send marked as an
// error). Tracing off: nothing is exported.
import { afterAll, describe, expect, test } from "bun:test";
import type { Server } from "bun";
import { testTls } from "../../test/support/tls.ts";
import { NO_TRACING, startTracing, tracingConfig } from "../tracing/index.ts";
import { addInstallation, auditRecord } from "./runtime/fixtures.ts";
import { deliverDue } from "./sinks/deliver.ts";
import { testControlPlane } from "./testing.ts";

const TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
const SHIPPER_SPAN = "b7ad6b7169203331";

type Span = { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; status?: { code?: number }; attributes: Record<string, unknown> };
const exported: Span[] = [];
const services: string[] = [];
const collector: Server<undefined> = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    const body = (await req.json()) as any;
    for (const rs of body.resourceSpans) {
      services.push(rs.resource.attributes.find((a: any) => a.key === "service.name").value.stringValue);
      for (const ss of rs.scopeSpans) for (const s of ss.spans) exported.push({ ...s, attributes: Object.fromEntries(s.attributes.map((a: any) => [a.key, Object.values(a.value)[0]])) });
    }
    return Response.json({});
  },
});
const tls = testTls();
let failing = false;
const siem: Server<undefined> = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  tls: { cert: tls.cert, key: tls.key },
  fetch: () => (failing ? new Response("busy", { status: 503 }) : Response.json({ text: "Success", code: 0 })),
});
afterAll(async () => {
  await collector.stop(true);
  await siem.stop(true);
});

test("the control plane's service name is its own by default", () => {
  expect(tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318" }, "svc-controlplane")).toMatchObject({ serviceName: "svc-controlplane" });
  expect(tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SERVICE_NAME: "cp-eu" }, "svc-controlplane")).toMatchObject({ serviceName: "cp-eu" });
});

describe("ingest and SIEM delivery, traced", () => {
  test("an ingest batch under the shipper's traceparent, a sink batch of its own trace, a failed send an error", async () => {
    const cp = await testControlPlane();
    const tracing = startTracing({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector.port}` }, "svc-controlplane");
    cp.deps.tracing = tracing;
    const inst = await addInstallation(cp);
    const records = Array.from({ length: 3 }, () => auditRecord(inst));
    const shipped = await cp.call("POST", "/api/v1/runtime/audit-records", {
      token: inst.token,
      body: { records: [...records, records[0]] },
      headers: { traceparent: `00-${TRACE_ID}-${SHIPPER_SPAN}-01` },
    });
    expect(shipped.json.inserted).toBe(3);
    const sink = await cp.call("POST", cp.org("/siem-sinks"), {
      body: { name: "lake", kind: "webhook", format: "ocsf", endpoint: `https://127.0.0.1:${siem.port}/hec`, secret: "a-webhook-hmac-secret-of-some-length", ca_pem: tls.ca, backfill: true },
    });
    expect(sink.status).toBe(201);
    const delivered = await deliverDue(cp.deps, { owner: "t", settleMs: 0 });
    expect(delivered).toBeGreaterThanOrEqual(3);
    // A failing receiver: the batch's span says so.
    await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: [auditRecord(inst)] } });
    failing = true;
    expect(await deliverDue(cp.deps, { owner: "t", settleMs: 0 })).toBe(0);
    await tracing.shutdown();

    expect(new Set(services)).toEqual(new Set(["svc-controlplane"]));
    const ingests = exported.filter((s) => s.name === "svc.audit.ingest");
    expect(ingests).toHaveLength(2);
    const ingest = ingests.find((s) => s.traceId === TRACE_ID)!;
    expect([ingest.parentSpanId, ingest.kind]).toEqual([SHIPPER_SPAN, 2]); // SERVER, the shipper's child
    expect(ingest.attributes).toEqual({
      "svc.installation.id": inst.installationId,
      "svc.audit.batch.records": 4,
      "svc.audit.batch.inserted": 3,
      "svc.audit.batch.duplicates": 1,
      "svc.audit.batch.rejected": 0,
    });
    const deliveries = exported.filter((s) => s.name === "svc.siem.deliver");
    expect(deliveries).toHaveLength(2);
    const [ok, failed] = deliveries;
    expect(ok!.kind).toBe(3); // CLIENT
    expect(ok!.attributes).toMatchObject({ "svc.sink.id": sink.json.id, "svc.organization.id": cp.orgId, "svc.sink.kind": "webhook", "svc.sink.format": "ocsf", "svc.siem.batch.records": delivered });
    expect(ok!.status?.code ?? 0).not.toBe(2);
    expect(failed!.status?.code).toBe(2); // ERROR
    expect(failed!.attributes["svc.siem.batch.records"]).toBe(1);
  });

  test("tracing off (the default): nothing is exported", async () => {
    const before = exported.length;
    const cp = await testControlPlane();
    expect(cp.deps.tracing ?? NO_TRACING).toBe(NO_TRACING);
    const inst = await addInstallation(cp);
    await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: [auditRecord(inst)] }, headers: { traceparent: `00-${TRACE_ID}-${SHIPPER_SPAN}-01` } });
    await Bun.sleep(300);
    expect(exported.length).toBe(before);
  });
});
