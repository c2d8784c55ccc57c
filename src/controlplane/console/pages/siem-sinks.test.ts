// The SIEM sinks page through the real app (in-process): each sink with its status, delivered
// count, lag and last error; linked from the nav; the secret never on the page.
import { expect, test } from "bun:test";
import { PASSWORD } from "../../auth/test-fixtures.ts";
import { addInstallation, auditRecord } from "../../runtime/fixtures.ts";
import { deliverDue } from "../../sinks/deliver.ts";
import { testControlPlane } from "../../testing.ts";
import { PRESESSION_COOKIE } from "../csrf.ts";
import { browser } from "../test-browser.ts";
import { lastErrorCell } from "./siem-sinks.ts";

test("the page lists each sink with its health and lag, and the last error of a failing one", async () => {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const ok = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => Response.json({ text: "Success", code: 0 }) });
  try {
    const secret = "page-test-hmac-secret-value";
    expect((await cp.call("POST", cp.org("/siem-sinks"), { body: { name: "healthy", kind: "webhook", endpoint: `http://127.0.0.1:${ok.port}/hec`, secret } })).status).toBe(201);
    // Port 9 on loopback: nothing listens, every delivery fails.
    expect((await cp.call("POST", cp.org("/siem-sinks"), { body: { name: "broken", kind: "webhook", endpoint: "http://127.0.0.1:9/hec", secret } })).status).toBe(201);
    const records = [auditRecord(inst), auditRecord(inst), auditRecord(inst)];
    await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records } });
    const b = browser(cp);
    await b.get("/sign-in");
    await b.post("/sign-in", { email: "owner@example.com", password: PASSWORD, _csrf: b.jar.get(PRESESSION_COOKIE)! });
    // healthy: the two sinks' creation events and the sign-in (admin events stream too), and the three records
    expect(await deliverDue(cp.deps, { owner: "t", settleMs: 0 })).toBe(3 + 3);
    const res = await b.get("/siem-sinks");
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('href="/siem-sinks"');
    const row = (name: string) => page.slice(page.indexOf(`data-sink="${name}"`), page.indexOf("</tr>", page.indexOf(`data-sink="${name}"`)));
    expect(row("healthy")).toMatch(/data-status>[^]*ok[^]*data-delivered>6<[^]*data-lag>0 records/);
    expect(row("broken")).toMatch(/data-status>[^]*failing \(1\)[^]*data-delivered>0<[^]*data-lag>5 records/);
    expect(row("broken")).toMatch(/data-last-error[^>]*>[^]*(ECONNREFUSED|connect)/i);
    expect(page).toContain("1 sink is failing");
    expect(page).not.toContain(secret);
  } finally {
    await ok.stop(true);
  }
});

test("the form creates a sink (a refused one comes back filled, never with the secret) and a button deletes it", async () => {
  const cp = await testControlPlane();
  const b = browser(cp);
  await b.get("/sign-in");
  await b.post("/sign-in", { email: "owner@example.com", password: PASSWORD, _csrf: b.jar.get(PRESESSION_COOKIE)! });
  const secret = "console-form-hmac-secret";
  const bad = await b.post("/siem-sinks", { name: "splunk", kind: "webhook", endpoint: "http://siem.example.com/hec", secret, _csrf: await b.csrf() });
  expect(bad.status).toBe(422);
  const badPage = await bad.text();
  expect(badPage).toContain("endpoint must be an https:// URL");
  expect(badPage).toContain('value="http://siem.example.com/hec"');
  expect(badPage).not.toContain(secret);
  const ok = await b.post("/siem-sinks", { name: "splunk", kind: "webhook", endpoint: "https://siem.example.com/hec", secret, format: "ocsf", include_ciphertext: "on", _csrf: await b.csrf() });
  expect(ok.status).toBe(303);
  const [sink] = (await cp.call("GET", cp.org("/siem-sinks"))).json.sinks;
  expect(sink).toMatchObject({ name: "splunk", kind: "webhook", format: "ocsf", secret_set: true, include_ciphertext: true });
  const listed = await (await b.get("/siem-sinks?done=created")).text();
  expect(listed).toContain('data-sink="splunk"');
  expect(listed).toContain("OCSF 1.8.0 events");
  expect(listed).toContain('<option value="ecs"');
  expect(listed).not.toContain(secret);
  // the list links to a confirmation, which holds the only form that deletes
  expect(listed).toContain(`href="/siem-sinks/${sink.id}/delete"`);
  expect(listed).not.toContain(`action="/siem-sinks/${sink.id}/delete"`);
  const confirm = await b.get(`/siem-sinks/${sink.id}/delete`);
  expect(confirm.status).toBe(200);
  const confirmPage = await confirm.text();
  expect(confirmPage).toContain("Delete sink &quot;splunk&quot;?");
  expect(confirmPage).toContain("are never sent to it");
  expect(confirmPage).toContain(`action="/siem-sinks/${sink.id}/delete"`);
  expect(confirmPage).toContain('href="/siem-sinks">Cancel</a>');
  expect((await cp.call("GET", cp.org("/siem-sinks"))).json.sinks).toHaveLength(1);
  const del = await b.post(`/siem-sinks/${sink.id}/delete`, { _csrf: await b.csrf() });
  expect(del.status).toBe(303);
  expect((await cp.call("GET", cp.org("/siem-sinks"))).json.sinks).toEqual([]);
});

test("the form: the secret is marked required for a webhook (not optional), the empty list points at the form, and the loopback hint shows only with the demo's opt-in", async () => {
  for (const allowLoopbackSinks of [false, true]) {
    const cp = await testControlPlane({ config: { allowLoopbackSinks } });
    const b = browser(cp);
    await b.get("/sign-in");
    await b.post("/sign-in", { email: "owner@example.com", password: PASSWORD, _csrf: b.jar.get(PRESESSION_COOKIE)! });
    const page = await (await b.get("/siem-sinks")).text();
    expect(page).toMatch(/<label for="f-secret">Secret <span class="optional">\(required for a webhook\)<\/span><\/label>/);
    expect(page).toContain("No sinks yet: add one with the form below");
    expect(page.includes("data-try-locally")).toBe(allowLoopbackSinks);
  }
});

test("an error a later delivery got past is shown as over, not as the sink's state", () => {
  const health = {
    status: "ok",
    failures: 0,
    delivered: 5,
    lag_records: 0,
    lag_records_capped: false,
    lag_seconds: 0,
    last_success_at: "2026-11-27T10:05:00.000Z",
    last_error_at: "2026-11-27T10:00:00.000Z",
    last_error: "ECONNREFUSED",
    next_attempt_at: null,
  } as const;
  const recovered = String(lastErrorCell(health));
  expect(recovered).toContain("none now");
  expect(recovered).toContain("is over");
  expect(recovered).not.toContain("ECONNREFUSED");
  const failing = String(lastErrorCell({ ...health, status: "failing", last_success_at: "2026-11-27T09:00:00.000Z" }));
  expect(failing).toContain("ECONNREFUSED");
});
