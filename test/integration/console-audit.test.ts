// The console's audit view for a security team (issue 15) and policy editing (issue 17), in
// real Chromium against a real control-plane process: background tasks hidden by default and
// marked, the kind filter, the deciding policy linked, a record's detail page, the CSV export
// of the page's filters, the per-user view from Users, the overview's activity chart, and a
// policy's condition and mode edited (a CEL error shown with its position, nothing saved).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser } from "playwright-core";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import {
  type SeededRuntime,
  alertText,
  type TestPage,
  api,
  auditRecord,
  cookieHeader,
  launchBrowser,
  openPage,
  org,
  ownerPassword,
  screenshot,
  seedRuntime,
  shipRecords,
  signIn,
} from "./console-browser.ts";

setDefaultTimeout(60_000);

let cp: ControlPlaneProcess;
let browser: Browser;
let owner: TestPage;
let rt: SeededRuntime;
let policyId: string;
let adaId: string;
const ids: Record<string, string> = {};

beforeAll(async () => {
  cp = await startControlPlane();
  browser = await launchBrowser();
  rt = await seedRuntime(cp);
  const pol = await api(cp, "POST", org(cp, "/policies"), { name: "lookups for all", src: "*", dst: "tool:crm.lookup", effect: "permit", workspace: "default" });
  if (pol.status !== 201) throw new Error(`policy: ${pol.status} ${JSON.stringify(pol.json)}`);
  policyId = pol.json.id;
  const user = await api(cp, "POST", org(cp, "/users"), { email: "ada@example.com" });
  if (user.status !== 201 && user.status !== 200) throw new Error(`user: ${user.status} ${JSON.stringify(user.json)}`);
  adaId = user.json.id;
  const base = (o: Parameters<typeof auditRecord>[2]) => auditRecord(rt, cp, { userId: adaId, remoteUserId: "fe-ada", ...o });
  const model = (task?: string) => ({
    ...base({ tool: "x", decision: "permit" }),
    kind: "model",
    action: "model:invoke",
    tool_name: null,
    model: "gpt-demo",
    policy_id: policyId,
    ...(task ? { task } : {}),
  });
  const lookup = { ...base({ tool: "crm.lookup", decision: "permit" }), policy_id: policyId };
  const update = base({ tool: "crm.update", decision: "deny" });
  const turn = model();
  const title = model("title_generation");
  const tags = model("tags_generation");
  Object.assign(ids, { lookup: lookup.id, update: update.id, turn: turn.id, title: title.id, tags: tags.id });
  await shipRecords(cp, rt, [lookup, update, turn, title, tags]);
  owner = await openPage(browser);
  await signIn(owner.page, cp, "owner@example.com", ownerPassword(cp));
}, 60_000);

afterAll(async () => {
  await owner?.context.close().catch(() => {});
  await browser?.close();
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
});

const rowIds = async (page: TestPage["page"]) => (await page.locator("tbody tr td:first-child a").allTextContents()).map((t) => t.trim()).sort();

describe("audit view", () => {
  test("background tasks are hidden by default, marked when shown, and alone on request; the kind filter narrows", async () => {
    const { page } = owner;
    await page.goto(cp.url + "/audit");
    expect(await rowIds(page)).toEqual([ids.lookup!, ids.update!, ids.turn!].sort());
    await page.getByLabel("Background tasks").selectOption("all");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/background=all/);
    expect(await rowIds(page)).toEqual(Object.values(ids).sort());
    await expect(page.locator("tr", { hasText: ids.title! }).textContent()).resolves.toContain("background: title");
    await page.getByLabel("Background tasks").selectOption("only");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/background=only/);
    expect(await rowIds(page)).toEqual([ids.title!, ids.tags!].sort());
    await page.goto(cp.url + "/audit?kind=tool");
    expect(await rowIds(page)).toEqual([ids.lookup!, ids.update!].sort());
    await page.goto(cp.url + "/audit?tool=crm.*");
    expect(await rowIds(page)).toEqual([ids.lookup!, ids.update!].sort());
    await page.goto(cp.url + "/audit?tool=crm.l");
    expect(await rowIds(page)).toEqual([ids.lookup!]);
  });

  test("a record names the policy that decided it, linked; its id opens the detail page with every field and no ciphertext", async () => {
    const { page } = owner;
    await page.goto(cp.url + "/audit?kind=tool");
    const row = page.locator("tr", { hasText: ids.lookup! });
    const link = row.getByRole("link", { name: "lookups for all" });
    expect(await link.getAttribute("href")).toBe(`/policies#${policyId}`);
    await row.getByRole("link", { name: ids.lookup! }).click();
    await page.waitForURL(`${cp.url}/audit/${ids.lookup}`);
    const text = (await page.locator("dl.props").textContent())!;
    for (const want of ["crm.lookup", "lookups for all", "ada@example.com", "fe-ada", "bundle revision 7", "digest-only"]) expect(text).toContain(want);
    // times name their zone (the browser's local one; UTC in the title and without scripts)
    expect(await page.locator("dl.props time").first().textContent()).toMatch(/UTC|GMT/);
    await screenshot(page, "audit-record");
    // a malformed or unknown id is a 4xx page, not an error
    expect((await page.goto(cp.url + "/audit/not-a-record"))!.status()).toBe(404);
    expect((await page.goto(cp.url + "/audit/rec_01ZZZZZZZZZZZZZZZZZZZZZZZZ"))!.status()).toBe(404);
  });

  test("the CSV export holds the page's filters: the records shown, background tasks left out", async () => {
    const res = await fetch(`${cp.url}/audit/export.csv?decision=permit`, { headers: { cookie: await cookieHeader(owner.context) } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/csv");
    expect(res.headers.get("content-disposition")).toContain("attachment");
    const csv = await res.text();
    expect(csv).toContain(ids.lookup!);
    expect(csv).toContain(ids.turn!);
    expect(csv).not.toContain(ids.update!);
    expect(csv).not.toContain(ids.title!);
    const all = await (await fetch(`${cp.url}/audit/export.csv?background=only`, { headers: { cookie: await cookieHeader(owner.context) } })).text();
    expect(all).toContain(ids.title!);
    expect(all).not.toContain(ids.lookup!);
    // signed out: no file
    const anon = await fetch(`${cp.url}/audit/export.csv`, { redirect: "manual" });
    expect(anon.status).toBe(303);
  });

  test("Users links each user to their records", async () => {
    const { page } = owner;
    await page.goto(cp.url + "/users");
    await page
      .locator("tr", { hasText: "ada@example.com" })
      .getByRole("link", { name: /Audit records/ })
      .click();
    await page.waitForURL(/\/audit\?user=/);
    expect(await rowIds(page)).toEqual([ids.lookup!, ids.update!, ids.turn!].sort());
  });

  test("the overview charts the last 24 hours' decisions and ranks tools and users", async () => {
    const { page } = owner;
    await page.goto(cp.url + "/");
    const chart = page.locator("#activity-chart");
    expect((await chart.locator("[data-figure=permits]").textContent())!.trim()).toBe("2"); // lookup + the user's turn
    expect((await chart.locator("[data-figure=denies]").textContent())!.trim()).toBe("1");
    expect(await chart.locator("rect.bar-deny").count()).toBe(1);
    const tools = page.getByRole("region", { name: "Top tools" });
    expect(await tools.locator("tbody tr").allTextContents()).toEqual(["crm.lookup10", "crm.update11"]);
    await expect(page.getByRole("region", { name: "Top users" }).textContent()).resolves.toContain("ada@example.com");
    await screenshot(page, "overview-activity");
  });
});

describe("SIEM sinks and escrow recovery pages", () => {
  test("a sink made in the form is listed; against a receiver that is down it shows failing, the last error and the lag of the backfilled records; the secret is never shown", async () => {
    const { page } = owner;
    const secret = "console-hmac-key-0123456789";
    await page.goto(cp.url + "/siem-sinks");
    // a refused form comes back filled, without the secret, naming what was wrong
    await page.getByLabel("Name").fill("siem");
    await page.getByLabel("Endpoint").fill("http://siem.example.com/collector");
    await page.getByLabel("Secret").fill(secret);
    await page.getByRole("button", { name: "Create sink" }).click();
    expect(await alertText(page, cp)).toMatch(/endpoint/i);
    expect(await page.getByLabel("Secret").inputValue()).toBe("");
    expect(await page.getByLabel("Name").inputValue()).toBe("siem");
    // port 9 on loopback: nothing listens, every delivery attempt fails
    await page.getByLabel("Endpoint").fill("https://127.0.0.1:9/services/collector/event");
    await page.getByLabel("Secret").fill(secret);
    await page.getByLabel(/Also deliver the records already stored/).check();
    await page.getByRole("button", { name: "Create sink" }).click();
    await page.waitForURL(/\/siem-sinks\?done=created/);
    const row = page.locator('tr[data-sink="siem"]');
    let status = "";
    for (let i = 0; i < 30 && !status.includes("failing"); i++) {
      await Bun.sleep(1000);
      await page.reload();
      status = (await row.locator("[data-status]").textContent()) ?? "";
    }
    expect(status).toContain("failing");
    expect((await row.locator("[data-last-error]").textContent())!.trim()).not.toBe("none");
    // the backfill: the runtime's records and the admin trail's events (the sink's creation among them)
    const admins = (await api(cp, "GET", org(cp, "/audit-records?kind=admin&limit=500"))).json.records.length as number;
    expect((await row.locator("[data-lag]").textContent())!).toContain(`${Object.keys(ids).length + admins} records`);
    expect((await row.locator("[data-delivered]").textContent())!.trim()).toBe("0");
    expect(await page.content()).not.toContain(secret);
    await screenshot(page, "siem-sinks");
  });

  test("the escrow recovery section lists no open request and refuses, naming why, a record that is not encrypted to escrow", async () => {
    const { page } = owner;
    await page.goto(cp.url + "/audit-keys");
    const section = page.getByRole("region", { name: "Escrow recovery (break-glass)" });
    await expect(section.textContent()).resolves.toContain("No open recovery requests");
    await page.getByLabel("Audit record id").fill(ids.lookup!);
    await page.getByLabel("Reason").fill("incident 4711");
    await page.getByRole("button", { name: "Request recovery" }).click();
    expect(await alertText(page, cp)).toMatch(/escrow|digest-only|recipients/i);
    expect((await api(cp, "GET", org(cp, "/audit-recovery-requests"))).json.requests ?? []).toEqual([]);
  });
});

describe("policy editing", () => {
  test("a condition with a CEL error is refused naming its position and keeps what was typed; a valid one and shadow mode are saved", async () => {
    const { page } = owner;
    await page.goto(cp.url + "/policies");
    await page.getByRole("link", { name: "Edit policy lookups for all" }).click();
    await page.waitForURL(`${cp.url}/policies/${policyId}/edit`);
    await page.getByLabel("Condition").fill("args.amount <= ");
    await page.getByRole("button", { name: "Save policy" }).click();
    // The form posts to /policies/<id>, which answers the page again with the error: wait for
    // that answer itself, so a slow answer and a missing alert fail as different steps.
    await page.waitForURL(`${cp.url}/policies/${policyId}`);
    expect(await alertText(page, cp)).toMatch(/line 1|column|position/i);
    expect(await page.getByLabel("Condition").inputValue()).toBe("args.amount <= ");
    expect((await api(cp, "GET", org(cp, "/policies"))).json.policies.find((p: { id: string }) => p.id === policyId).condition ?? null).toBeNull();
    await page.getByLabel("Condition").fill("args.amount <= 500");
    await page.getByLabel("Mode").selectOption("shadow");
    await page.getByRole("button", { name: "Save policy" }).click();
    await page.waitForURL(`${cp.url}/policies?done=updated`);
    const row = page.locator(`tr[id="${policyId}"]`);
    await expect(row.textContent()).resolves.toContain("args.amount <= 500");
    await expect(row.textContent()).resolves.toContain("shadow");
    const saved = (await api(cp, "GET", org(cp, "/policies"))).json.policies.find((p: { id: string }) => p.id === policyId);
    expect(saved).toMatchObject({ condition: "args.amount <= 500", mode: "shadow" });
    // cleared again: an empty condition applies always
    await page.goto(`${cp.url}/policies/${policyId}/edit`);
    await page.getByLabel("Condition").fill("");
    await page.getByRole("button", { name: "Save policy" }).click();
    await page.waitForURL(`${cp.url}/policies?done=updated`);
    expect((await api(cp, "GET", org(cp, "/policies"))).json.policies.find((p: { id: string }) => p.id === policyId).condition ?? null).toBeNull();
  });
});
