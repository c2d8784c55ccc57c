// The SIEM sinks page through the real app (in-process): each sink with its status, delivered
// count, lag and last error; linked from the nav; the secret never on the page.
import { expect, test } from "bun:test";
import { PASSWORD } from "../../auth/test-fixtures.ts";
import { addInstallation, auditRecord } from "../../runtime/fixtures.ts";
import { deliverDue } from "../../sinks/deliver.ts";
import { testControlPlane } from "../../testing.ts";
import { PRESESSION_COOKIE } from "../csrf.ts";
import { browser } from "../test-browser.ts";

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
    expect(row("broken")).toMatch(/data-last-error>[^]*(ECONNREFUSED|connect)/i);
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
  const ok = await b.post("/siem-sinks", { name: "splunk", kind: "webhook", endpoint: "https://siem.example.com/hec", secret, include_ciphertext: "on", _csrf: await b.csrf() });
  expect(ok.status).toBe(303);
  const [sink] = (await cp.call("GET", cp.org("/siem-sinks"))).json.sinks;
  expect(sink).toMatchObject({ name: "splunk", kind: "webhook", secret_set: true, include_ciphertext: true });
  const listed = await (await b.get("/siem-sinks?done=created")).text();
  expect(listed).toContain('data-sink="splunk"');
  expect(listed).not.toContain(secret);
  const del = await b.post(`/siem-sinks/${sink.id}/delete`, { _csrf: await b.csrf() });
  expect(del.status).toBe(303);
  expect((await cp.call("GET", cp.org("/siem-sinks"))).json.sinks).toEqual([]);
});
