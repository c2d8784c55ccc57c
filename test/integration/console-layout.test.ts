// Every console page in real Chromium at 1400×900 (issue 33's Done-when), on a store filled the
// way a busy organization fills it (long policy conditions, MCP server URLs, encrypted audit
// records with their outcomes, usage of several users, a failing SIEM sink): no page and no
// table scrolls sideways, the charts' legends show their colours (read from the computed style:
// the console's CSP blocks inline styles), the browser reports no CSP violation, and axe-core
// finds nothing serious or critical. A screenshot of each page goes to
// test-artifacts/screenshots/console-1400/ (never to git).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { newId } from "../../src/contract/ids.ts";
import { type ControlPlaneProcess, REPO, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import { type SeededRuntime, ageRecipient, api, auditRecord, claimLink, launchBrowser, org, ownerPassword, seedRuntime, shipRecords, signIn } from "./console-browser.ts";

setDefaultTimeout(120_000);

const AXE = readFileSync(join(REPO, "node_modules/axe-core/axe.min.js"), "utf8");
const WIDTH = 1400;
const HEIGHT = 900;
const SHOTS = "console-1400";

let cp: ControlPlaneProcess;
let browser: Browser;
let page: Page;
let rt: SeededRuntime;
const ids: Record<string, string> = {};
/** CSP violations the pages reported (securitypolicyviolation events and console errors). */
const violations: string[] = [];

async function seed(): Promise<void> {
  rt = await seedRuntime(cp, "helpdesk-with-a-rather-long-installation-name");
  const tools = ["crm.lookup_customer", "crm.update", "tickets.list_open", "billing.issue_credit_note_for_a_customer"].map((name) => ({
    name,
    access: name.includes("update") || name.includes("credit") ? "write" : "read",
  }));
  await api(cp, "PUT", "/api/v1/runtime/tools", { tools }, rt.runtimeToken);
  const users: string[] = [];
  for (const email of ["ada.lovelace@example.com", "grace.hopper@example.com", "katherine.johnson@example.com", "a.very.long.email.address.for.testing@subsidiary.example.com"]) {
    users.push((await api(cp, "POST", org(cp, "/users"), { email, display_name: email.split("@")[0] })).json.id);
  }
  await api(cp, "POST", org(cp, `/users/${users[0]}/remote-identities`), { platform: "chatui", remote_user_id: "5f0c8a52-6f5d-4f7a-9a63-0d2b8f6f1e11" });
  const policies = [
    {
      name: "credit notes up to 500 for sales, in office hours",
      src: "group:sales-and-customer-success-emea",
      dst: "tool:billing.issue_credit_note_for_a_customer",
      effect: "permit",
      condition: "args.amount <= 500 && now.getHours('Europe/Berlin') >= 8 && now.getHours('Europe/Berlin') < 18 && !(now.getDayOfWeek('Europe/Berlin') in [0, 6])",
    },
    { name: "chat", src: "*", dst: "model:invoke", effect: "permit" },
    { name: "no crm writes on weekends (shadow)", src: "*", dst: "tool:crm.update", effect: "deny", condition: "now.getDayOfWeek('Europe/Berlin') in [0, 6]", mode: "shadow" },
    { name: "typo", src: "*", dst: "tool:crm.lookup_custmer", effect: "permit" },
  ];
  for (const p of policies) {
    const r = await api(cp, "POST", org(cp, "/policies"), { ...p, workspace: "default", agent_id: rt.agentId });
    if (r.status !== 201) throw new Error(`policy: ${r.status} ${JSON.stringify(r.json)}`);
    ids.policy = r.json.id;
  }
  const server = await api(cp, "POST", org(cp, "/tool-servers"), {
    name: "knowledge-base-search",
    workspace: "default",
    transport: "http",
    url: "https://knowledge-base.internal.example.com:8443/mcp/v1/streamable-http-endpoint",
  });
  if (server.status !== 201) throw new Error(`tool server: ${server.status} ${JSON.stringify(server.json)}`);
  ids.server = server.json.id;
  await api(cp, "POST", org(cp, `/tool-servers/${ids.server}/assign`), { agent_id: rt.agentId });
  const key = await api(cp, "POST", org(cp, "/audit-encryption-keys"), { name: "security team", public_key: await ageRecipient() });
  const now = Date.now();
  const records: unknown[] = [];
  for (let i = 0; i < 40; i++) {
    const userId = users[i % users.length]!;
    const tool = tools[i % tools.length]!.name;
    const ts = new Date(now - i * 37 * 60_000).toISOString();
    const decision = i % 3 === 0 ? "deny" : "permit";
    const d = auditRecord(rt, cp, { tool, decision, userId, ts, keyIds: i % 2 ? [key.json.id] : [] });
    records.push(d);
    if (decision === "permit")
      records.push({
        ...auditRecord(rt, cp, { tool, decision: "permit", userId, ts }),
        kind: "outcome",
        reason: "outcome",
        ref: d.id,
        outcome: i % 5 ? "ok" : "error",
        exit_code: i % 5 ? 0 : 1,
        policy_id: null,
      });
    if (i === 1) ids.record = d.id;
  }
  // model calls' outcomes with usage, for the usage page's charts (several users and models)
  for (let i = 0; i < 24; i++) {
    const ts = new Date(now - i * 5 * 3_600_000).toISOString();
    const decision = {
      ...auditRecord(rt, cp, { tool: "x", decision: "permit", userId: users[i % users.length]!, ts }),
      kind: "model",
      action: "model:invoke",
      tool_name: null,
      model: ["gpt-4o-mini", "claude-sonnet", "mistral-large-latest"][i % 3],
    };
    records.push(decision, {
      ...decision,
      id: newId("auditRecord", Date.parse(ts)),
      kind: "outcome",
      reason: "outcome",
      ref: decision.id,
      outcome: "ok",
      exit_code: 0,
      prompt_tokens: 200 + i * 13,
      completion_tokens: 80 + i,
      cost: 0.001 * i,
    });
  }
  await shipRecords(cp, rt, records);
  await api(cp, "POST", org(cp, "/budgets"), { name: "ada-monthly-token-budget", scope: "user", target: users[0], period: "month", unit: "tokens", limit: 5000 });
  // a sink whose receiver is down: failing, with its error and lag
  const sink = await api(cp, "POST", org(cp, "/siem-sinks"), {
    name: "splunk-hec-production",
    kind: "webhook",
    endpoint: "https://127.0.0.1:9/services/collector/event/1.0/raw/with/a/long/path",
    secret: "console-layout-hmac-secret",
    backfill: true,
  });
  ids.sink = sink.json.id;
  await api(cp, "POST", org(cp, "/members"), { email: "second.admin.with.a.long.address@example.com", role: "admin", password: "second admin password 123" });
  ids.claim = await claimLink(cp, rt, "9b1c3a0e-2d44-4f0a-8c7e-5e6f7a8b9c0d", "new.chat.user@example.com");
  ids.token = (await api(cp, "GET", org(cp, "/api-tokens"))).json.api_tokens[0].id;
}

beforeAll(async () => {
  cp = await startControlPlane();
  await seed();
  browser = await launchBrowser();
  const context = await browser.newContext({ viewport: { width: WIDTH, height: HEIGHT }, colorScheme: "light" });
  // Every CSP violation a page reports, before any of its scripts run.
  await context.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) => {
      const w = window as unknown as { __csp?: string[] };
      (w.__csp ??= []).push(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`);
    });
  });
  page = await context.newPage();
  page.on("console", (m) => {
    if (/Content Security Policy/i.test(m.text())) violations.push(`${page.url()}: ${m.text()}`);
  });
  await signIn(page, cp, "owner@example.com", ownerPassword(cp));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
});

/** What a page at 1400×900 does wrong, if anything: sideways scrolling, CSP violations, axe's serious or critical findings. */
async function check(path: string, name: string): Promise<{ overflow: string[]; csp: string[]; axe: string[] }> {
  const res = await page.goto(cp.url + path);
  expect(res?.status(), `${path} status`).toBeLessThan(400);
  await page.screenshot({ path: join(REPO, "test-artifacts/screenshots", SHOTS, `${name}.png`), fullPage: true });
  const overflow = await page.evaluate(() => {
    const out: string[] = [];
    const doc = document.documentElement;
    if (doc.scrollWidth > doc.clientWidth) out.push(`the page is ${doc.scrollWidth} px wide in a ${doc.clientWidth} px window`);
    for (const el of Array.from(document.querySelectorAll<HTMLElement>(".table-wrap, pre, main, .panel"))) {
      if (el.scrollWidth > el.clientWidth + 1)
        out.push(`${el.className || el.tagName} "${el.getAttribute("aria-label") ?? el.querySelector("h2")?.textContent ?? ""}" scrolls: ${el.scrollWidth} px in ${el.clientWidth} px`);
    }
    return out;
  });
  const csp = await page.evaluate(() => (window as unknown as { __csp?: string[] }).__csp ?? []);
  // axe-core, evaluated through DevTools (not a script tag the page's CSP would refuse)
  await page.evaluate(AXE);
  const axe = await page.evaluate(async () => {
    const r = await (
      window as unknown as { axe: { run: (ctx: Document, o: object) => Promise<{ violations: Array<{ id: string; impact: string; help: string; nodes: Array<{ target: string[] }> }> }> } }
    ).axe.run(document, { resultTypes: ["violations"] });
    return r.violations
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map(
        (v) =>
          `${v.impact} ${v.id}: ${v.help} (${v.nodes
            .map((n) => n.target.join(" "))
            .slice(0, 3)
            .join(", ")})`,
      );
  });
  return { overflow, csp, axe };
}

const PAGES: Array<[string, () => string]> = [
  ["overview", () => "/"],
  ["agents", () => "/agents"],
  ["installations", () => "/installations"],
  ["installation", () => `/installations/${rt.installationId}`],
  ["model-profiles", () => "/model-profiles"],
  ["tool-servers", () => "/tool-servers"],
  ["tool-server", () => `/tool-servers/${ids.server}`],
  ["policies", () => "/policies"],
  ["policy-edit", () => `/policies/${ids.policy}/edit`],
  ["policy-delete", () => `/policies/${ids.policy}/delete`],
  ["users", () => "/users"],
  ["groups", () => "/groups"],
  ["identities", () => "/identities"],
  ["members", () => "/members"],
  ["audit", () => "/audit"],
  ["audit-outcomes", () => "/audit?kind=outcome"],
  ["audit-record", () => `/audit/${ids.record}`],
  ["usage", () => "/usage"],
  ["audit-keys", () => "/audit-keys"],
  ["siem-sinks", () => "/siem-sinks"],
  ["siem-sink-delete", () => `/siem-sinks/${ids.sink}/delete`],
  ["settings", () => "/settings"],
  ["sso-delete", () => "/settings/sso/delete"],
  ["token-revoke", () => `/api-tokens/${ids.token}/revoke`],
];

describe("every console page at 1400×900", () => {
  test.each(PAGES)("%s: no sideways scroll, no CSP violation, nothing serious or critical for axe-core", async (name, path) => {
    const r = await check(path(), name);
    expect({ page: name, ...r }).toEqual({ page: name, overflow: [], csp: [], axe: [] });
  });

  test("the claim page and the sign-in page too (before a session)", async () => {
    const other = await browser.newContext({ viewport: { width: WIDTH, height: HEIGHT } });
    const p = await other.newPage();
    try {
      for (const [name, url] of [
        ["claim", ids.claim!],
        ["sign-in", `${cp.url}/sign-in`],
      ] as const) {
        await p.goto(url);
        await p.screenshot({ path: join(REPO, "test-artifacts/screenshots", SHOTS, `${name}.png`), fullPage: true });
        expect(await p.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth)).toBe(true);
        await p.evaluate(AXE);
        const axe = await p.evaluate(async () =>
          ((await (window as any).axe.run(document, { resultTypes: ["violations"] })).violations as Array<{ id: string; impact: string }>)
            .filter((v) => v.impact === "serious" || v.impact === "critical")
            .map((v) => v.id),
        );
        expect({ page: name, axe }).toEqual({ page: name, axe: [] });
      }
    } finally {
      await other.close();
    }
  });

  test("the charts' legends show their colours: each swatch's computed background is a colour, and the series differ", async () => {
    for (const path of ["/", "/usage"]) {
      await page.goto(cp.url + path);
      const swatches = await page.locator(".legend .swatch").evaluateAll((els) => els.map((e) => getComputedStyle(e).backgroundColor));
      expect(swatches.length, path).toBeGreaterThanOrEqual(2);
      for (const c of swatches) expect(c, `${path} swatch`).not.toMatch(/^(rgba\(0, 0, 0, 0\)|transparent)$/);
      // and the bars they stand for have the same colours as their swatches
      const fills = await page.locator("figure.chart svg rect").evaluateAll((els) => [...new Set(els.map((e) => getComputedStyle(e).fill))]);
      for (const f of fills) expect(swatches, `${path}: bar colour ${f} has a swatch`).toContain(f);
    }
    const overview = await (async () => {
      await page.goto(cp.url + "/");
      return page.locator("#activity-chart .legend .swatch").evaluateAll((els) => els.map((e) => getComputedStyle(e).backgroundColor));
    })();
    expect(new Set(overview).size).toBe(2); // permitted and denied are told apart
    expect(violations).toEqual([]);
  });
});
