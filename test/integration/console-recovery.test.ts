// Escrow recovery's two-person rule in the console (issue 27), in real Chromium against a real
// control-plane process: the second owner's request is announced to the first owner on sign-in;
// an admin the requester made (with a password the requester chose) presses Approve and is
// refused on the page with the provenance code, which is announced too; the first owner, a
// member for more than 24 hours and freshly signed in, presses Approve and it goes through;
// each notice stays until its reader dismisses it. Ages are set by moving rows back.
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser } from "playwright-core";
import { Encrypter } from "age-encryption";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import { bootstrapRuntime, createAgent, createInstallation, runtimeRecord } from "./cli-support.ts";
import { type TestPage, ageRecipient, alertText, api, launchBrowser, openPage, org, ownerPassword, screenshot, signIn } from "./console-browser.ts";
import { ageMemberships, apiSignIn, tokenFrom } from "./recovery-support.ts";

setDefaultTimeout(60_000);

let cp: ControlPlaneProcess;
let browser: Browser;
const pages: TestPage[] = [];
const SECOND = { email: "second.owner@example.com", password: "a long enough password for the second owner" };
const PUPPET = { email: "ops.helper@example.com", password: "a password the second owner chose" };
let requestId: string;

beforeAll(async () => {
  cp = await startControlPlane();
  browser = await launchBrowser();
  const customer = await ageRecipient();
  const key = (await api(cp, "POST", org(cp, "/audit-encryption-keys"), { name: "security", public_key: customer })).json;
  const settings = (await api(cp, "PATCH", org(cp, "/settings"), { escrow_enabled: true })).json;
  const escrowKey = (await api(cp, "GET", org(cp, "/audit-encryption-keys"))).json.keys.find((k: { kind: string }) => k.kind === "escrow");
  const runtime = await bootstrapRuntime(cp, (await createInstallation(cp, await createAgent(cp))).id);
  const e = new Encrypter();
  for (const r of [customer, settings.escrow_recipient]) e.addRecipient(r);
  const ciphertext = Buffer.from(await e.encrypt('{"arguments":{"account":"ACME"},"payload":null}')).toString("base64");
  const record = runtimeRecord(runtime, { args_digest: null, digest_key_id: null, recipient_key_ids: [key.id, escrowKey.id], ciphertext });
  expect((await api(cp, "POST", "/api/v1/runtime/audit-records", { records: [record] }, runtime.token)).json.inserted).toBe(1);
  // The first owner adds a second owner, who adds an admin of their own with a chosen password.
  expect((await api(cp, "POST", org(cp, "/members"), { email: SECOND.email, role: "owner", password: SECOND.password })).status).toBe(201);
  const secondToken = await tokenFrom(cp, await apiSignIn(cp, SECOND.email, SECOND.password));
  expect((await api(cp, "POST", org(cp, "/members"), { email: PUPPET.email, role: "admin", password: PUPPET.password }, secondToken)).status).toBe(201);
  await ageMemberships(cp, ["owner@example.com", SECOND.email, PUPPET.email], 25);
  const requested = await api(cp, "POST", org(cp, "/audit-recovery-requests"), { record_id: record.id, reason: "incident 4711" }, secondToken);
  expect(requested.status).toBe(201);
  requestId = requested.json.id;
});

afterAll(async () => {
  for (const p of pages) await p.context.close().catch(() => {});
  await browser?.close();
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
});

async function open(): Promise<TestPage> {
  const p = await openPage(browser);
  pages.push(p);
  return p;
}

test("the requester's own admin is refused on the Approve button with the provenance code; the other owner, freshly signed in, approves; notices until dismissed", async () => {
  const puppet = await open();
  await signIn(puppet.page, cp, PUPPET.email, PUPPET.password);
  await puppet.page.goto(`${cp.url}/audit-keys`);
  await puppet.page.getByRole("button", { name: `Approve recovery ${requestId}` }).click();
  const alert = await alertText(puppet.page, cp);
  expect(alert).toContain(`${PUPPET.email} was created as admin by ${SECOND.email}`);
  expect(alert).toContain("(recovery_approver_provenance)");
  await screenshot(puppet.page, "recovery-approve-refused");
  expect((await api(cp, "GET", org(cp, `/audit-recovery-requests/${requestId}`))).json.status).toBe("pending");

  // The first owner signs in: the page it lands on announces the request and the refusal.
  const owner = await open();
  await signIn(owner.page, cp, "owner@example.com", ownerPassword(cp));
  const notices = owner.page.getByRole("region", { name: "Notifications" });
  await expect(notices.textContent()).resolves.toContain(`${SECOND.email} requested escrow recovery ${requestId}`);
  await expect(notices.textContent()).resolves.toContain("Escrow recovery approval refused");
  await screenshot(owner.page, "recovery-notices");
  await owner.page.getByRole("button", { name: "Dismiss notice: Escrow recovery approval refused" }).click();
  await owner.page.waitForURL(`${cp.url}/`);
  await expect(owner.page.getByRole("region", { name: "Notifications" }).textContent()).resolves.not.toContain("approval refused");

  await owner.page.goto(`${cp.url}/audit-keys`);
  await expect(owner.page.locator("[data-approver-rule]").textContent()).resolves.toContain("a member for at least 24 hours when the request was made");
  await owner.page.getByRole("button", { name: `Approve recovery ${requestId}` }).click();
  await owner.page.waitForURL(/done=recovery-approved/);
  await expect(owner.page.getByRole("status").first().textContent()).resolves.toContain("Recovery approved");
  expect((await api(cp, "GET", org(cp, `/audit-recovery-requests/${requestId}`))).json).toMatchObject({ status: "approved", approved_by: { email: "owner@example.com" } });

  // The requester is told on their next sign-in, and so is the admin whose approval was refused.
  const second = await open();
  await signIn(second.page, cp, SECOND.email, SECOND.password);
  await expect(second.page.getByRole("region", { name: "Notifications" }).textContent()).resolves.toContain("owner@example.com approved escrow recovery");
  await puppet.page.goto(`${cp.url}/`);
  await expect(puppet.page.getByRole("region", { name: "Notifications" }).textContent()).resolves.toContain("owner@example.com approved escrow recovery");
});
