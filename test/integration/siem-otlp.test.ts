// SIEM sinks (issue 15), the OTLP kind: OTLP/HTTP logs in the JSON encoding, POSTed to a real
// HTTPS receiver, each body then checked against the OTLP protobuf definitions from PyPI
// (opentelemetry-proto, test/support/otlp_validate.py: strict JSON parse, protobuf round trip).
// Not against a running OpenTelemetry Collector: no registry this project may use ships a
// Collector binary, and building one from its Go modules does not fit the CI budget (docs/siem.md).
import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import type { Server } from "bun";
import { ocsfProblems } from "../support/siem-schemas/validate.ts";
import { testTls } from "../support/tls.ts";
import { addInstallation, auditRecord } from "../../src/controlplane/runtime/fixtures.ts";
import { testControlPlane } from "../../src/controlplane/testing.ts";
import { backoffMs, deliverDue } from "../../src/controlplane/sinks/deliver.ts";

const TOKEN = "otlp-bearer-token-0123456789";
const got: { auth: string | null; type: string | null; path: string; body: string }[] = [];
const state = { status: 200 };
const tls = testTls();
const server: Server<undefined> = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  tls: { cert: tls.cert, key: tls.key },
  async fetch(req) {
    const body = await req.text();
    if (state.status !== 200) return new Response(JSON.stringify({ code: 14, message: "unavailable" }), { status: state.status, headers: { "content-type": "application/json" } });
    got.push({ auth: req.headers.get("authorization"), type: req.headers.get("content-type"), path: new URL(req.url).pathname, body });
    // An ExportLogsServiceResponse: full success.
    return Response.json({});
  },
});
afterAll(async () => server.stop(true));

function validate(bodies: string[]): any[] {
  const r = Bun.spawnSync(["python3", join(import.meta.dir, "../support/otlp_validate.py")], { stdin: new TextEncoder().encode(bodies.join("\n")), stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`otlp_validate.py: ${r.stderr.toString()} (scripts/setup.sh installs opentelemetry-proto from PyPI)`);
  return r.stdout
    .toString()
    .trim()
    .split("\n")
    .map((l) => JSON.parse(l));
}

test("OTLP/HTTP logs: bodies parse as ExportLogsServiceRequest, one LogRecord per audit record, retried through a 503", async () => {
  let clock = Date.now();
  const cp = await testControlPlane({ now: () => clock });
  const inst = await addInstallation(cp);
  const url = `https://127.0.0.1:${server.port}/v1/logs`;
  const made = await cp.call("POST", cp.org("/siem-sinks"), { body: { name: "otel", kind: "otlp", endpoint: url, secret: TOKEN, ca_pem: tls.ca } });
  expect(made.status).toBe(201);
  expect(made.text).not.toContain(TOKEN);
  const permits = Array.from({ length: 3 }, () => auditRecord(inst));
  const deny = auditRecord(inst, { decision: "deny", reason: "policy", tool_name: "crm.delete", action: "tool:crm.delete" });
  await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: [...permits, deny] } });
  state.status = 503;
  expect(await deliverDue(cp.deps, { owner: "t", settleMs: 0, batchSize: 2 })).toBe(0);
  expect((await cp.call("GET", cp.org("/siem-sinks"))).json.sinks[0].health).toMatchObject({ status: "failing", last_error: expect.stringContaining("HTTP 503"), lag_records: 1 + 4 });
  state.status = 200;
  clock += backoffMs(1) + 1;
  expect(await deliverDue(cp.deps, { owner: "t", settleMs: 0, batchSize: 2 })).toBe(1 + 4);
  expect(got.length).toBe(3);
  for (const g of got) {
    expect(g.path).toBe("/v1/logs");
    expect(g.type).toBe("application/json");
    expect(g.auth).toBe(`Bearer ${TOKEN}`);
  }
  // the admin event of the sink's own creation comes with them (after the runtime records: chains are read store first)
  const parsed = validate(got.map((g) => g.body));
  const created = parsed.find((l) => l.attributes["svc.kind"] === "admin")!;
  const logs = parsed.filter((l) => l !== created);
  // The admin event, with its severity mapped (notice: INFO2) and who made it, from where.
  expect(created.severity_number).toBe(10);
  expect(created.attributes).toMatchObject({
    "svc.kind": "admin",
    "svc.action": "siem_sink.create",
    "svc.actor.id": cp.accountId,
    "svc.actor.email": "owner@example.com",
    "svc.result": "ok",
    "svc.severity": "notice",
    "svc.target": `siem_sink:${made.json.id}`,
  });
  expect(JSON.parse(created.body).admin.after).toMatchObject({ name: "otel", kind: "otlp", secret: expect.stringMatching(/^sha256:/) });
  expect(created.body).not.toContain(TOKEN);
  const all = [...permits, deny];
  expect(logs.map((l) => l.attributes["svc.record.id"])).toEqual(all.map((r) => r.id));
  for (const [i, l] of logs.entries()) {
    const rec = all[i]!;
    expect(l.resource["service.name"]).toBe("svc-controlplane");
    expect(l.scope).toBe("svc.audit");
    expect(l.event_name).toBe("svc:audit");
    expect(l.time_unix_nano).toBe(`${BigInt(Date.parse(rec.ts)) * 1_000_000n}`);
    expect(l.severity_number).toBe(rec.decision === "deny" ? 13 : 9);
    expect(l.attributes).toMatchObject({ "svc.organization.id": cp.orgId, "svc.decision": rec.decision, "svc.tool.name": rec.tool_name, "svc.kind": "tool" });
    expect(JSON.parse(l.body)).toMatchObject({ id: rec.id, decision: rec.decision, args_digest: rec.args_digest });
  }
  // A malformed body is caught by the validator (the check is not vacuous).
  expect(() => validate([JSON.stringify({ resourceLogs: [{ scopeLogs: [{ logRecords: [{ severityNumber: "LOUD" }] }] }] })])).toThrow(/not an ExportLogsServiceRequest/);
});

test("OTLP with format ocsf: the same log records, each body an OCSF event of the vendored schema", async () => {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const url = `https://127.0.0.1:${server.port}/v1/logs`;
  const made = await cp.call("POST", cp.org("/siem-sinks"), { body: { name: "lake", kind: "otlp", endpoint: url, ca_pem: tls.ca, format: "ocsf" } });
  expect([made.status, made.json.format]).toEqual([201, "ocsf"]);
  const deny = auditRecord(inst, { decision: "deny", reason: "policy", tool_name: "crm.delete", action: "tool:crm.delete" });
  await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: [deny] } });
  const before = got.length;
  expect(await deliverDue(cp.deps, { owner: "t", settleMs: 0, batchSize: 10 })).toBe(1 + 1);
  const parsed = validate(got.slice(before).map((g) => g.body));
  expect(parsed.map((l) => l.event_name)).toEqual(["svc:audit:ocsf", "svc:audit:ocsf"]);
  const events = parsed.map((l) => JSON.parse(l.body));
  for (const e of events) expect(ocsfProblems(e)).toEqual([]);
  expect(events.map((e) => [e.class_uid, e.metadata.uid])).toEqual([
    [6003, deny.id],
    [3004, expect.any(String)],
  ]);
  // The envelope is unchanged: the deny's severity and the attributes a SIEM indexes on.
  expect([parsed[0].severity_number, parsed[0].attributes["svc.record.id"]]).toEqual([13, deny.id]);
});
