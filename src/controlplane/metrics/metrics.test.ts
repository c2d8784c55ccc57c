// The control plane's /metrics: off without SVC_CP_METRICS_TOKEN, bearer-only with it; ingest
// and request counters move.
import { describe, expect, test } from "bun:test";
import { addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { ControlPlaneMetrics } from "./index.ts";

const value = (text: string, series: string) =>
  Number(
    text
      .split("\n")
      .find((l) => l.startsWith(`${series} `))
      ?.slice(series.length + 1) ?? NaN,
  );

describe("GET /metrics", () => {
  test("off (404) without a metrics token", async () => {
    const cp = await testControlPlane();
    expect((await cp.call("GET", "/metrics")).status).toBe(404);
  });

  test("needs the bearer; counts ingested records, decisions, tokens and requests by route", async () => {
    const cp = await testControlPlane({ config: { metricsToken: "m3trics-token" } });
    expect((await cp.call("GET", "/metrics", { token: null })).status).toBe(401);
    expect((await cp.call("GET", "/metrics", { token: "wrong" })).status).toBe(401);
    const inst = await addInstallation(cp);
    const deny = auditRecord(inst, { decision: "deny", reason: "svc.denied" });
    const usage = auditRecord(inst, { kind: "outcome", action: "model:invoke", tool_name: null, reason: "outcome", outcome: "ok", prompt_tokens: 30, completion_tokens: 12, cost: 0.5 });
    const batch = [auditRecord(inst), deny, usage];
    await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: batch } });
    await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: batch } });
    // Requests are counted after their response is sent: wait for the second one to show.
    const posts = 'svc_cp_http_requests_total{method="POST",route="/api/v1/runtime/audit-records",status="200"}';
    let res = await cp.call("GET", "/metrics", { token: "m3trics-token" });
    for (let i = 0; i < 200 && value(res.text, posts) !== 2; i++) {
      await Bun.sleep(5);
      res = await cp.call("GET", "/metrics", { token: "m3trics-token" });
    }
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
    const m = res.text;
    expect(value(m, "svc_cp_audit_batches_total")).toBe(2);
    expect(value(m, 'svc_cp_audit_records_total{status="inserted"}')).toBe(3);
    expect(value(m, 'svc_cp_audit_records_total{status="duplicate"}')).toBe(3);
    expect(value(m, 'svc_cp_decisions_total{kind="tool",result="permit"}')).toBe(1);
    expect(value(m, 'svc_cp_decisions_total{kind="tool",result="svc.denied"}')).toBe(1);
    expect(value(m, 'svc_cp_model_tokens_total{type="prompt"}')).toBe(30);
    expect(value(m, 'svc_cp_model_tokens_total{type="completion"}')).toBe(12);
    expect(value(m, "svc_cp_model_cost_total")).toBe(0.5);
    expect(value(m, posts)).toBe(2);
    expect(m).toContain('svc_cp_http_request_duration_seconds_count{route="/api/v1/runtime/audit-records"} 2');
  });
});

test("the SQLite checkpoint worker's state is shown: up or waiting to be started again, and its restarts", async () => {
  const metrics = new ControlPlaneMetrics();
  let health = { running: true, restarts: 0, lastError: null as string | null };
  metrics.watchCheckpoints(() => health);
  expect(await metrics.registry.render()).toContain("svc_cp_sqlite_checkpoint_worker_up 1\n");
  health = { running: false, restarts: 3, lastError: "SQLiteError: unable to open database file" };
  const text = await metrics.registry.render();
  expect(text).toContain("svc_cp_sqlite_checkpoint_worker_up 0\n");
  expect(text).toContain("# TYPE svc_cp_sqlite_checkpoint_worker_restarts_total counter\nsvc_cp_sqlite_checkpoint_worker_restarts_total 3\n");
});
