// The console's tamper evidence (issue 27), on the Audit keys page through the real app: the
// signing key's fingerprint (as the API and `svc audit verify` name it), the last checkpoint,
// and the control plane's own verification, run by "Verify now", tampered once a row is changed.
import { expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { PASSWORD } from "../../auth/test-fixtures.ts";
import { verificationSettled } from "../../audit-chain/verify-store.ts";
import { tables } from "../../db/index.ts";
import { addInstallation, auditRecord } from "../../runtime/fixtures.ts";
import { testControlPlane } from "../../testing.ts";
import { PRESESSION_COOKIE } from "../csrf.ts";
import { browser } from "../test-browser.ts";

test("the Audit keys page shows the key's fingerprint, the last checkpoint and the last verification; Verify now runs one", async () => {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const records = [auditRecord(inst), auditRecord(inst, { decision: "deny", reason: "svc.denied" })];
  await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records } });
  const b = browser(cp);
  await b.get("/sign-in");
  await b.post("/sign-in", { email: "owner@example.com", password: PASSWORD, _csrf: b.jar.get(PRESESSION_COOKIE)! });
  const key = (await cp.call("GET", cp.org("/audit-signing-key"))).json as { public_key: string; fingerprint: string };

  let page = await (await b.get("/audit-keys")).text();
  expect(page).toContain('id="tamper-evidence"');
  expect(page).toMatch(new RegExp(`data-key-fingerprint><code[^>]*>${key.fingerprint.replace(/[+/]/g, (c) => `\\${c}`)}</code>`));
  expect(page).toMatch(/data-last-checkpoint><span class="muted">none yet/);
  expect(page).toContain('data-verification-state="none"');

  const signed = await b.post("/audit-keys/checkpoint", { _csrf: await b.csrf() });
  expect(signed.status).toBe(303);
  const ran = await b.post("/audit-keys/verify", { _csrf: await b.csrf() });
  expect(ran.status).toBe(303);
  expect(ran.headers.get("location")).toBe("/audit-keys?done=verifying#tamper-evidence");
  await verificationSettled(cp.orgId);
  page = await (await b.get("/audit-keys")).text();
  // #2: the run's own admin event (audit_verification.run) is signed at once after it
  expect(page).toMatch(/data-last-checkpoint>#2, <time/);
  expect(page).toContain('data-verification-state="verified"');

  const a = tables(cp.deps.db).auditRecords;
  await cp.deps.db.update(a).set({ decision: "permit" }).where(eq(a.id, records[1]!.id));
  await b.post("/audit-keys/verify", { _csrf: await b.csrf() });
  await verificationSettled(cp.orgId);
  page = await (await b.get("/audit-keys")).text();
  expect(page).toContain('data-verification-state="tampered"');
  expect(page).toMatch(new RegExp(`data-verification-detail>record ${records[1]!.id} \\(#2 of chain store\\) was changed`));
});

test("roll-ups lowered by SQL, the records untouched: the page shows the run tampered and the roll-up finding", async () => {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const records = [auditRecord(inst), auditRecord(inst, { decision: "deny", reason: "svc.denied" })];
  await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records } });
  const b = browser(cp);
  await b.get("/sign-in");
  await b.post("/sign-in", { email: "owner@example.com", password: PASSWORD, _csrf: b.jar.get(PRESESSION_COOKIE)! });
  const hc = tables(cp.deps.db).auditHourlyCalls;
  await cp.deps.db.delete(hc).where(eq(hc.decision, "deny"));
  await b.post("/audit-keys/verify", { _csrf: await b.csrf() });
  await verificationSettled(cp.orgId);
  const page = await (await b.get("/audit-keys")).text();
  expect(page).toContain('data-verification-state="tampered"');
  expect(page).toMatch(/data-rollup-mismatches="1">.*roll-ups differ from the records.*roll-up audit_hourly_calls of organization \S+ for the hour from .* holds 0 calls; its records give 1 calls/);
});
