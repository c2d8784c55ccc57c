// The admin trail (issue 27) through the console, in real Chromium against a real control-plane
// process: each change made in the console is exactly one admin event naming the owner's
// console session, the browser's address and its user agent (the console's in-process API
// calls carry them); the secret typed into a form is only a digest; the admin-activity page
// (Audit → Admin activity) lists the events newest first, filters them by actor, action and
// result, and shows an event's before and after; a member is refused the page, once, on record.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser } from "playwright-core";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import { type TestPage, api, launchBrowser, openPage, org, ownerPassword, screenshot, signIn } from "./console-browser.ts";

setDefaultTimeout(90_000);

const MEMBER = { email: "member@example.com", password: "member password 123" };
const SINK_SECRET = "console-typed-hmac-secret";

let cp: ControlPlaneProcess;
let browser: Browser;
let owner: TestPage;
let userAgent: string;
const seen = new Set<string>();

type Event = { id: string; action: string; admin: { actor: Record<string, any>; before?: any; after?: any } };

async function fresh(): Promise<Event[]> {
  const r = await api(cp, "GET", org(cp, "/audit-records?kind=admin&limit=500"));
  const events = (r.json.records as Event[]).filter((e) => !seen.has(e.id));
  for (const e of events) seen.add(e.id);
  return events;
}

/** Does one thing in the console; returns the one admin event it wrote, checking its actor. */
async function one(action: string, act: () => Promise<unknown>): Promise<Event> {
  await fresh();
  await act();
  const got = await fresh();
  expect({ action, got: got.map((e) => e.action) }).toEqual({ action, got: [action] });
  expect(got[0]!.admin.actor).toMatchObject({ email: "owner@example.com", role: "owner", credential: { kind: "session" }, ip: "127.0.0.1", user_agent: userAgent });
  return got[0]!;
}

beforeAll(async () => {
  cp = await startControlPlane();
  browser = await launchBrowser();
  const m = await api(cp, "POST", org(cp, "/members"), { email: MEMBER.email, role: "member", password: MEMBER.password });
  if (m.status !== 201) throw new Error(`member: ${m.status} ${JSON.stringify(m.json)}`);
  owner = await openPage(browser);
  userAgent = await owner.page.evaluate(() => navigator.userAgent);
  await fresh();
  await signIn(owner.page, cp, "owner@example.com", ownerPassword(cp));
});

afterAll(async () => {
  await owner?.context.close().catch(() => {});
  await browser?.close();
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
});

describe("the admin trail in the console", () => {
  test("each change made in the console is one event naming the session, the browser's address and user agent", async () => {
    const [signedIn] = await fresh();
    expect(signedIn).toMatchObject({ action: "session.sign_in", admin: { actor: { email: "owner@example.com", ip: "127.0.0.1", user_agent: userAgent, credential: { kind: "session" } } } });
    const { page } = owner;
    await one("agent.create", async () => {
      await page.goto(cp.url + "/agents");
      await page.getByLabel("Name", { exact: true }).fill("sales assistant");
      await page.getByRole("button", { name: "Create agent" }).click();
      await page.waitForURL(/\/agents/);
    });
    const created = await one("policy.create", async () => {
      await page.goto(cp.url + "/policies");
      await page.getByLabel("Name", { exact: true }).fill("support may chat");
      await page.getByLabel("Who (source)").fill("group:support");
      await page.getByLabel("What (destination)").fill("model:invoke");
      await page.getByRole("button", { name: "Create policy" }).click();
      await page.waitForLoadState();
    });
    const policyId = created.admin.after.id as string;
    const edited = await one("policy.update", async () => {
      await page.goto(`${cp.url}/policies/${policyId}/edit`);
      await page.getByLabel("Effect").selectOption("deny");
      await page.getByRole("button", { name: "Save policy" }).click();
      await page.waitForLoadState();
    });
    expect(edited.admin).toMatchObject({ before: { effect: "permit" }, after: { effect: "deny" } });
    await one("member.add", async () => {
      await page.goto(cp.url + "/members");
      await page.getByLabel("Email", { exact: true }).fill("ada@example.com");
      await page.getByLabel("Role").selectOption("admin");
      await page.getByRole("button", { name: "Add member" }).click();
      await page.waitForLoadState();
    });
    const sink = await one("siem_sink.create", async () => {
      await page.goto(cp.url + "/siem-sinks");
      await page.getByLabel("Name", { exact: true }).fill("splunk");
      await page.getByLabel("Endpoint").fill("http://127.0.0.1:9/hec");
      await page.getByLabel("Secret").fill(SINK_SECRET);
      await page.getByRole("button", { name: "Create sink" }).click();
      await page.waitForLoadState();
    });
    expect(sink.admin.after.secret).toMatch(/^sha256:[0-9a-f]{16}$/);
    await one("siem_sink.delete", async () => {
      await page.goto(cp.url + "/siem-sinks");
      // deleting asks first: the list links to a confirmation page that holds the form
      await page
        .getByRole("link", { name: /^Delete sink/ })
        .first()
        .click();
      await page.getByRole("button", { name: "Delete sink" }).click();
      await page.waitForLoadState();
    });
    const everything = (await api(cp, "GET", org(cp, "/audit-records/export?kind=admin"))).json;
    expect(JSON.stringify(everything ?? "")).not.toContain(SINK_SECRET);
  });

  test("the admin-activity page: linked from the nav, newest first, filtered by actor, action and result, an event's before and after", async () => {
    const { page } = owner;
    await page.goto(cp.url + "/");
    await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Admin activity" }).click();
    await page.waitForURL(/\/audit\/admin$/);
    const actions = async () => (await page.locator("tbody tr td[data-action] code").allTextContents()).map((t) => t.trim());
    const all = await actions();
    expect(all.slice(0, 5)).toEqual(["siem_sink.delete", "siem_sink.create", "member.add", "policy.update", "policy.create"]);
    expect(all.at(-1)).toBe("organization.bootstrap");
    expect(await page.locator("tbody tr").first().locator("td[data-actor]").textContent()).toContain("from 127.0.0.1");
    await screenshot(page, "admin-activity");

    await page.getByLabel("Action").fill("policy.*");
    await page.getByLabel("Actor").fill("owner@example.com");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/action=policy/);
    expect(await actions()).toEqual(["policy.update", "policy.create"]);

    await page.locator("tbody tr").first().locator("a.mono").click();
    await page.waitForURL(/\/audit\/rec_/);
    const changed = page.locator("tr.changed");
    expect(await changed.count()).toBe(1);
    expect(await changed.getAttribute("data-field")).toBe("effect");
    expect((await changed.locator("td").allTextContents()).map((t) => t.trim())).toEqual(["permit", "deny"]);
    expect(await page.getByText(userAgent, { exact: true }).count()).toBe(1);
    await screenshot(page, "admin-event");

    await page.goto(cp.url + "/audit/admin?result=refused");
    expect(await actions()).toEqual([]);
  });

  test("a member is refused the page, and that refusal is one event naming them", async () => {
    const member = await openPage(browser);
    try {
      await signIn(member.page, cp, MEMBER.email, MEMBER.password);
      await fresh();
      const res = await member.page.goto(cp.url + "/audit/admin");
      expect(res?.status()).toBe(403);
      const got = await fresh();
      expect(got.map((e) => [e.action, e.admin.actor.email, e.admin.actor.ip])).toEqual([["access.refused", MEMBER.email, "127.0.0.1"]]);
      await owner.page.goto(cp.url + "/audit/admin?result=refused");
      expect((await owner.page.locator("tbody tr td[data-action] code").allTextContents()).map((t) => t.trim())).toEqual(["access.refused"]);
    } finally {
      await member.context.close();
    }
  });
});
