// Traces of MCP tool calls (issue 35), with real parts all along: a real daemon whose gateway
// takes a call carrying the caller's trace context the way the MCP Python SDK (Open WebUI's
// client) sends it (`params._meta.traceparent`, SEP-414) or as an HTTP header; a real
// OpenTelemetry Collector (otelcorecol, scripts/otelcol.sh) receiving svc's spans and the
// upstream's; and the Python SDK's MCPServer, instrumented with the OpenTelemetry SDK, over
// Streamable HTTP and over stdio. One trace holds the caller's span, svc's call, decision,
// spool write and upstream call, and the MCP server's own span under svc's.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../../log/index.ts";
import { type NotesServer, startNotesServer, toolServer } from "../../../test/support/mcp/servers.ts";
import { type Collector, type OtlpSpan, startCollector } from "../../../test/support/otel-collector.ts";
import { testTls } from "../../../test/support/tls.ts";
import { loadConfig } from "../config.ts";
import { type Daemon, startDaemon } from "../daemon.ts";
import { bundleIdentity, bundleTool, fakeBundle } from "../testing/bundle.ts";
import { daemonEnv, type FakeControlPlane, startFakeControlPlane } from "../testing/fake-control-plane.ts";
import { signSession } from "./session-jwt.ts";

const TOKEN = "svc_rt_mcp_trace";
const SECRET = "chatui-secret-for-trace-tests";
const SECRET_ARG = "an argument never in a span";
const CALLER_SPAN = "00f067aa0ba902b7";
const traceId = () => crypto.randomUUID().replaceAll("-", "");

let collector: Collector;
let notes: NotesServer;
let cp: FakeControlPlane;
let daemon: Daemon;
let stdioCalls: string;
let mcp: Client;

beforeAll(async () => {
  collector = await startCollector();
  const otlp = `${collector.httpEndpoint}/v1/traces`;
  notes = await startNotesServer({ otlp });
  stdioCalls = join(mkdtempSync(join(tmpdir(), "svc-mcp-trace-")), "calls.jsonl");
  writeFileSync(stdioCalls, "");
  cp = startFakeControlPlane(
    fakeBundle({
      version: 2,
      tools: [bundleTool("notes.lookup"), bundleTool("notes_stdio.lookup")],
      policies: ["notes", "notes_stdio"].map((server) => ({ id: "pol_notes", name: "notes", src: "*", dst: `tool:${server}.lookup`, effect: "permit" as const })),
      identities: [bundleIdentity("alice")],
      tool_servers: [toolServer.http(notes.url), toolServer.notesStdio(stdioCalls, otlp)],
    }),
    TOKEN,
  );
  const dir = mkdtempSync(join(tmpdir(), "svc-mcp-trace-"));
  const env = daemonEnv(cp, dir, { SVC_PROXY_CA_FILE: testTls().caFile, CHATUI_SECRET_KEY: SECRET });
  daemon = await startDaemon(loadConfig(env), silentLogger, { otelEnv: { OTEL_EXPORTER_OTLP_ENDPOINT: collector.httpEndpoint, OTEL_SERVICE_NAME: "svc-proxy" } });
  const end = Date.now() + 60_000;
  while (daemon.status.state !== "ready" && Date.now() < end) await Bun.sleep(50);
  await daemon.mcpSettled();
  mcp = new Client({ name: "test", version: "1" });
  const jwt = signSession({ id: "fe-alice", jti: crypto.randomUUID(), iat: Math.floor(Date.now() / 1000) }, SECRET);
  await mcp.connect(new StreamableHTTPClientTransport(new URL(daemon.mcpUrl!), { requestInit: { headers: { authorization: `Bearer ${jwt}` } } }));
}, 180_000);

afterAll(async () => {
  await mcp?.close();
  await daemon?.shutdown(2000);
  await cp?.stop();
  await notes?.stop();
  await collector?.stop();
});

const one = (spans: OtlpSpan[], service: string, name: string): OtlpSpan => {
  const hits = spans.filter((s) => s.service === service && s.name === name);
  expect(hits.map((s) => `${s.service}:${s.name}`)).toEqual([`${service}:${name}`]);
  return hits[0]!;
};

/** The trace of one call: svc's spans and the MCP server's, through the Collector. */
async function traced(trace: string, tool: string): Promise<{ spans: OtlpSpan[]; call: OtlpSpan; upstream: OtlpSpan; server: OtlpSpan }> {
  const upstreamName = `tools/call ${tool.slice(tool.indexOf(".") + 1)}`;
  const all = await collector.waitFor(
    (s) => s.some((x) => x.traceId === trace && x.service === "notes-mcp") && s.some((x) => x.traceId === trace && x.name === "svc.audit.spool_write"),
    `the trace of ${tool}`,
  );
  const spans = all.filter((s) => s.traceId === trace);
  const call = one(spans, "svc-proxy", `tools/call ${tool}`);
  const upstream = one(spans, "svc-proxy", upstreamName);
  const server = one(spans, "notes-mcp", upstreamName);
  return { spans, call, upstream, server };
}

describe("an MCP tool call, traced", () => {
  test("over Streamable HTTP, the caller's context in _meta: one trace from the caller's span to the MCP server's, traceparent in _meta and the HTTP header", async () => {
    const trace = traceId();
    const r = await mcp.callTool({ name: "notes.lookup", arguments: { term: SECRET_ARG }, _meta: { traceparent: `00-${trace}-${CALLER_SPAN}-01` } });
    expect(r.isError).toBeFalsy();
    const { spans, call, upstream, server } = await traced(trace, "notes.lookup");
    expect([call.parentSpanId, call.kind]).toEqual([CALLER_SPAN, 2]); // SERVER, under the caller's span
    expect(call.attributes).toMatchObject({ "mcp.method.name": "tools/call", "gen_ai.tool.name": "notes.lookup", "svc.mcp.server": "notes" });
    const decision = one(spans, "svc-proxy", "svc.decision");
    expect(decision.parentSpanId).toBe(call.spanId);
    expect(decision.attributes).toMatchObject({ "svc.decision": "permit", "svc.policy.id": "pol_notes", "svc.call.kind": "tool" });
    expect(one(spans, "svc-proxy", "svc.audit.spool_write").parentSpanId).toBe(call.spanId);
    expect([upstream.parentSpanId, upstream.kind]).toEqual([call.spanId, 3]); // CLIENT
    // The MCP server's span (its SDK's middleware, from _meta) is the child of svc's upstream call.
    expect([server.parentSpanId, server.kind, server.attributes["gen_ai.tool.name"]]).toEqual([upstream.spanId, 2, "lookup"]);
    // …and the HTTP request carried the same context as a header.
    const headers = notes
      .calls()
      .map((c) => (c as { http_traceparent?: string }).http_traceparent)
      .filter(Boolean);
    expect(headers).toContain(`00-${trace}-${upstream.spanId}-01`);
    expect(JSON.stringify(spans)).not.toContain(SECRET_ARG);
  });

  test("over stdio: the context reaches the server in _meta, its span under svc's upstream call", async () => {
    const trace = traceId();
    const r = await mcp.callTool({ name: "notes_stdio.lookup", arguments: { term: "x" }, _meta: { traceparent: `00-${trace}-${CALLER_SPAN}-01` } });
    expect(r.isError).toBeFalsy();
    expect(readFileSync(stdioCalls, "utf8")).toContain('"lookup"');
    const { call, upstream, server } = await traced(trace, "notes_stdio.lookup");
    expect(call.parentSpanId).toBe(CALLER_SPAN);
    expect(server.parentSpanId).toBe(upstream.spanId);
  });

  test("the caller's context as an HTTP traceparent header (no _meta) is taken too", async () => {
    const trace = traceId();
    const jwt = signSession({ id: "fe-alice", jti: crypto.randomUUID(), iat: Math.floor(Date.now() / 1000) }, SECRET);
    const c = new Client({ name: "test-header", version: "1" });
    await c.connect(new StreamableHTTPClientTransport(new URL(daemon.mcpUrl!), { requestInit: { headers: { authorization: `Bearer ${jwt}`, traceparent: `00-${trace}-${CALLER_SPAN}-01` } } }));
    try {
      expect((await c.callTool({ name: "notes.lookup", arguments: { term: "y" } })).isError).toBeFalsy();
    } finally {
      await c.close();
    }
    const { call, server, upstream } = await traced(trace, "notes.lookup");
    expect(call.parentSpanId).toBe(CALLER_SPAN);
    expect(server.parentSpanId).toBe(upstream.spanId);
  });

  test("a denied call: the call and its decision are traced, no upstream span, the server never called", async () => {
    const trace = traceId();
    const r = await mcp.callTool({ name: "notes.add_note", arguments: { text: "no" }, _meta: { traceparent: `00-${trace}-${CALLER_SPAN}-01` } });
    expect(r.isError).toBe(true);
    const all = await collector.waitFor((s) => s.some((x) => x.traceId === trace && x.name === "tools/call notes.add_note"), "the denied call");
    const spans = all.filter((s) => s.traceId === trace);
    expect(one(spans, "svc-proxy", "tools/call notes.add_note").attributes["error.type"]).toBe("tool_error");
    expect(spans.some((s) => s.name === "tools/call add_note")).toBe(false);
    expect(notes.calls().some((c) => c.tool === "add_note")).toBe(false);
  });
});
