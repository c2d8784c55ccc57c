// OpenTelemetry traces of the proxy (issue 35): the OTEL_* variables read (off by default), and
// a real daemon whose chat call, sent with Open WebUI's `traceparent`, is exported by the
// OpenTelemetry SDK to an OTLP/HTTP receiver as one trace: the call (child of the request's
// span), its decision (policy and effect), the durable write of its record, the model forward
// (GenAI attributes, token counts), whose `traceparent` reaches the model server. No span carries
// the conversation. With tracing off, nothing is exported and the request's `traceparent` is
// still passed on unchanged.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Server } from "bun";
import { silentLogger } from "../log/index.ts";
import { startModelServer } from "../../test/support/model-server.ts";
import { loadConfig } from "./config.ts";
import { type Daemon, startDaemon } from "./daemon.ts";
import { bundleIdentity, fakeBundle } from "./testing/bundle.ts";
import { daemonEnv, type FakeControlPlane, startFakeControlPlane } from "./testing/fake-control-plane.ts";
import { tracingConfig } from "../tracing/index.ts";

const TOKEN = "svc_rt_tracing_test";
const TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736";
const OPENWEBUI_SPAN = "00f067aa0ba902b7";
const SECRET_TEXT = "the conversation is never in a span";

describe("the OTEL_* variables", () => {
  test("off unless an endpoint is set; OTEL_TRACES_EXPORTER=none and OTEL_SDK_DISABLED turn it off", () => {
    expect(tracingConfig({})).toBeNull();
    expect(tracingConfig({ OTEL_SERVICE_NAME: "x" })).toBeNull();
    expect(tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_TRACES_EXPORTER: "none" })).toBeNull();
    expect(tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c:4318", OTEL_SDK_DISABLED: "true" })).toBeNull();
  });

  test("the endpoint (+ /v1/traces, or the traces one as given), headers, service name, sampler", () => {
    expect(
      tracingConfig({
        OTEL_EXPORTER_OTLP_ENDPOINT: "https://c:4318/",
        OTEL_EXPORTER_OTLP_HEADERS: "authorization=Bearer%20x,  x-team = ops",
        OTEL_TRACES_SAMPLER: "parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG: "0.25",
      }),
    ).toEqual({
      url: "https://c:4318/v1/traces",
      headers: { authorization: "Bearer x", "x-team": "ops" },
      serviceName: "svc-proxy",
      sampler: { name: "parentbased_traceidratio", ratio: 0.25 },
    });
    expect(tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "https://c:4318", OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://t:4318/x", OTEL_SERVICE_NAME: "edge" })).toMatchObject({
      url: "https://t:4318/x",
      serviceName: "edge",
      sampler: { name: "parentbased_always_on", ratio: 1 },
    });
  });

  test("a value it cannot use is named", () => {
    expect(tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_TRACES_EXPORTER: "zipkin" })).toEqual({ problem: "OTEL_TRACES_EXPORTER=zipkin: only otlp (or none) is supported" });
    expect(tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_TRACES_SAMPLER: "sometimes" })).toMatchObject({ problem: expect.stringContaining("OTEL_TRACES_SAMPLER=sometimes") });
    expect(tracingConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://c", OTEL_TRACES_SAMPLER_ARG: "2" })).toMatchObject({ problem: expect.stringContaining("OTEL_TRACES_SAMPLER_ARG=2") });
    expect(tracingConfig({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "c:4318" })).toMatchObject({ problem: expect.stringContaining("not an http(s) URL") });
  });
});

type OtlpSpan = { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes: { key: string; value: Record<string, unknown> }[] };
const attrs = (s: OtlpSpan) => Object.fromEntries(s.attributes.map((a) => [a.key, Object.values(a.value)[0]]));

describe("a chat call in a real daemon", () => {
  const model = startModelServer();
  const exported: { path: string; type: string | null; body: string }[] = [];
  let collector: Server<undefined>;
  let cp: FakeControlPlane;
  const dirs: string[] = [];
  const daemons: Daemon[] = [];

  async function daemonWith(otelEnv: Record<string, string>): Promise<{ daemon: Daemon; chat: (headers: Record<string, string>) => Promise<Response> }> {
    const dir = mkdtempSync(join(tmpdir(), "svc-tracing-"));
    dirs.push(dir);
    const daemon = await startDaemon(loadConfig(daemonEnv(cp, dir, { SVC_PROXY_CA_FILE: model.caFile })), silentLogger, { otelEnv });
    daemons.push(daemon);
    for (let i = 0; i < 400 && daemon.status.state !== "ready"; i++) await Bun.sleep(25);
    const chat = async (headers: Record<string, string>) =>
      fetch("http://localhost/v1/chat/completions", {
        unix: join(dir, "p.sock"),
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "x-svc-user-id": "fe-alice", ...headers },
        body: JSON.stringify({ model: "m-small", messages: [{ role: "user", content: SECRET_TEXT }] }),
      } as RequestInit);
    return { daemon, chat };
  }

  beforeAll(() => {
    collector = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        exported.push({ path: new URL(req.url).pathname, type: req.headers.get("content-type"), body: await req.text() });
        return Response.json({});
      },
    });
    cp = startFakeControlPlane(
      fakeBundle({
        policies: [{ id: "pol_models", name: "models for all", src: "*", dst: "model:invoke", effect: "permit" }],
        identities: [bundleIdentity("alice")],
        model_profile: { id: "mp_1", display_name: "LLM", endpoint: model.endpoint, auth_type: "none", default_model: "m-small", models: ["m-small"], api_key_sealed: null },
      }),
      TOKEN,
    );
  });
  afterAll(async () => {
    for (const d of daemons) await d.shutdown(1000).catch(() => undefined);
    await cp.stop();
    await model.stop();
    await collector.stop(true);
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  test("one trace from Open WebUI's span: the call, its decision, the record's durable write, the model forward; traceparent passed on", async () => {
    const { daemon, chat } = await daemonWith({ OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${collector.port}`, OTEL_SERVICE_NAME: "svc-proxy-test" });
    const r = await chat({ traceparent: `00-${TRACE_ID}-${OPENWEBUI_SPAN}-01` });
    expect(r.status).toBe(200);
    const recordId = r.headers.get("x-svc-record-id");
    await r.text();
    await daemon.shutdown(2000); // flushes the batch of spans
    const sent = model.requests.at(-1)!.headers.traceparent!;
    expect(sent).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`));

    expect(exported.length).toBeGreaterThan(0);
    for (const e of exported) expect([e.path, e.type]).toEqual(["/v1/traces", "application/json"]);
    const requests = exported.map((e) => JSON.parse(e.body));
    expect(requests[0].resourceSpans[0].resource.attributes).toContainEqual({ key: "service.name", value: { stringValue: "svc-proxy-test" } });
    const spans: OtlpSpan[] = requests.flatMap((q) => q.resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans)));
    const byName = Object.fromEntries(spans.map((s) => [s.name, s]));
    expect(Object.keys(byName).sort()).toEqual(["chat m-small", "svc.audit.spool_write", "svc.decision", "svc.model_call"]);
    for (const s of spans) expect(s.traceId).toBe(TRACE_ID);
    const call = byName["svc.model_call"]!;
    expect([call.parentSpanId, call.kind]).toEqual([OPENWEBUI_SPAN, 2]); // SERVER, a child of Open WebUI's span
    expect(byName["svc.decision"]!.parentSpanId).toBe(call.spanId);
    expect(attrs(byName["svc.decision"]!)).toMatchObject({ "svc.decision": "permit", "svc.policy.id": "pol_models", "svc.call.kind": "model" });
    expect(byName["svc.audit.spool_write"]!.parentSpanId).toBe(call.spanId);
    expect(attrs(byName["svc.audit.spool_write"]!)).toEqual({ "svc.record.id": recordId });
    const forward = byName["chat m-small"]!;
    expect([forward.parentSpanId, forward.kind]).toEqual([call.spanId, 3]); // CLIENT
    expect(sent).toBe(`00-${TRACE_ID}-${forward.spanId}-01`); // the provider's parent is the forward span
    expect(attrs(forward)).toMatchObject({
      "gen_ai.operation.name": "chat",
      "gen_ai.request.model": "m-small",
      "gen_ai.usage.input_tokens": expect.anything(),
      "gen_ai.usage.output_tokens": expect.anything(),
    });
    expect(JSON.stringify(requests)).not.toContain(SECRET_TEXT);
  });

  test("a pack tool decision: a span under the request's traceparent with the decision and the record's write, never the arguments", async () => {
    const before = exported.length;
    const dir = mkdtempSync(join(tmpdir(), "svc-tracing-"));
    dirs.push(dir);
    const daemon = await startDaemon(loadConfig(daemonEnv(cp, dir, { SVC_PROXY_CA_FILE: model.caFile })), silentLogger, {
      otelEnv: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `http://127.0.0.1:${collector.port}/v1/traces` },
    });
    daemons.push(daemon);
    for (let i = 0; i < 400 && daemon.status.state !== "ready"; i++) await Bun.sleep(25);
    const r = await fetch("http://localhost/v1/tools/decide", {
      unix: join(dir, "p.sock"),
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", traceparent: `00-${TRACE_ID}-${OPENWEBUI_SPAN}-01` },
      body: JSON.stringify({ tool: "crm.read", user: { id: "fe-alice" }, args: { q: SECRET_TEXT } }),
    } as RequestInit);
    const answer = (await r.json()) as { decision: string; record_id: string };
    await daemon.shutdown(2000);
    const spans: OtlpSpan[] = exported.slice(before).flatMap((e) => JSON.parse(e.body).resourceSpans.flatMap((rs: any) => rs.scopeSpans.flatMap((ss: any) => ss.spans)));
    const byName = Object.fromEntries(spans.map((s) => [s.name, s]));
    expect(Object.keys(byName).sort()).toEqual(["svc.audit.spool_write", "svc.decision", "svc.tool_decision"]);
    const top = byName["svc.tool_decision"]!;
    expect([top.traceId, top.parentSpanId, top.kind]).toEqual([TRACE_ID, OPENWEBUI_SPAN, 2]);
    expect(attrs(top)).toMatchObject({ "gen_ai.tool.name": "crm.read", "svc.record.id": answer.record_id, "svc.decision": answer.decision });
    expect(attrs(byName["svc.decision"]!)).toMatchObject({ "svc.call.kind": "tool", "svc.action": "tool:crm.read", "svc.decision": answer.decision });
    expect(byName["svc.audit.spool_write"]!.parentSpanId).toBe(top.spanId);
    expect(
      exported
        .slice(before)
        .map((e) => e.body)
        .join(""),
    ).not.toContain(SECRET_TEXT);
  });

  test("off by default: nothing exported; the request's traceparent still reaches the provider unchanged", async () => {
    const before = exported.length;
    const { daemon, chat } = await daemonWith({});
    const r = await chat({ traceparent: `00-${TRACE_ID}-${OPENWEBUI_SPAN}-01` });
    expect(r.status).toBe(200);
    await r.text();
    expect(model.requests.at(-1)!.headers.traceparent).toBe(`00-${TRACE_ID}-${OPENWEBUI_SPAN}-01`);
    const plain = await chat({});
    await plain.text();
    expect(model.requests.at(-1)!.headers.traceparent).toBeUndefined();
    await daemon.shutdown(1000);
    expect(exported.length).toBe(before);
  });
});
