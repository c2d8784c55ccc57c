// The README's run command in demo mode (issue 19), as a newcomer runs it: `bash
// scripts/start.sh --demo` on a fresh state directory reaches a governed chat with no provider
// account: the demo model calls a tool, svc permits it under the owner's identity, a write is
// refused, and a Ctrl-C (SIGINT to the script alone, as a terminal sends it to the foreground
// job) stops everything once, the spool drained.
// In real Chromium (issue 19's Done-when script): the owner's permitted tool call is drawn
// completed and the write's refusal failed, with the spec's text; a chat user who is not a
// console member is invited with `svc users invite`, sets a chat password, gets the clickable
// claim link in the chat, follows it, is linked, and the next call is permitted; the console's
// overview and audit pages show those records (asserted, then screenshotted to a temp dir).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO, freePort, waitFor } from "../support/controlplane-process.ts";
import { addUser, chatTurn, messageText, modelIds, signIn } from "../support/openwebui.ts";
import type { Browser } from "playwright-core";
import { launchBrowser, openPage } from "../integration/console-browser.ts";
import { answerShows, callOutput, callState, chatSignIn, doneToolCall, sendInNewChat, shot } from "./demo-browser.ts";

setDefaultTimeout(300_000);

const dir = mkdtempSync(join(tmpdir(), "svc-demo-"));
const ports = { cp: freePort(), chat: freePort(), demo: freePort() };
let script: ReturnType<typeof Bun.spawn> | null = null;
let out = "";
const OWNER = "owner@example.com";

async function cp(path: string): Promise<any> {
  const token = readFileSync(join(dir, "controlplane/owner-api-token"), "utf8").trim();
  const res = await fetch(`http://127.0.0.1:${ports.cp}/api/v1${path}`, { headers: { authorization: `Bearer ${token}` } });
  return res.json();
}

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error("start.sh runs the runtime as UID 10001: run this suite as root (CI does)");
  script = Bun.spawn(["bash", "scripts/start.sh", "--demo"], {
    cwd: REPO,
    env: { ...process.env, SVC_LOCAL_DIR: dir, SVC_CP_PORT: String(ports.cp), SVC_CHAT_PORT: String(ports.chat), SVC_DEMO_PORT: String(ports.demo), SVC_TOKEN: undefined, SVC_CONTROL_PLANE_URL: undefined },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  for (const s of [script.stdout, script.stderr] as ReadableStream<Uint8Array>[]) {
    void (async () => {
      const reader = s.getReader();
      const dec = new TextDecoder();
      for (let r = await reader.read(); !r.done; r = await reader.read()) out += dec.decode(r.value, { stream: true });
    })();
  }
  await waitFor(() => {
    if (script!.exitCode !== null) throw new Error(`start.sh exited ${script!.exitCode}:\n${out}`);
    return out.includes("Ctrl-C stops everything.");
  }, "start.sh --demo to say everything is ready", 280_000);
});

let browser: Browser | null = null;
const chatUrl = () => `http://127.0.0.1:${ports.chat}`;
const cpUrl = () => `http://127.0.0.1:${ports.cp}`;
const BOB = { name: "Bob Chat", email: "bob@example.com", chatPassword: "bob-owui-pass-1", svcPassword: "bob-chat-pass-2" };

/** The svc CLI the script printed, signed in with the owner's token. */
function svcCli(args: string[]): { code: number; stdout: string; stderr: string } {
  const token = readFileSync(join(dir, "controlplane/owner-api-token"), "utf8").trim();
  const r = Bun.spawnSync([join(REPO, "dist/svc"), ...args], { env: { ...process.env, SVC_CONTROL_PLANE_URL: cpUrl(), SVC_TOKEN: token } });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

afterAll(async () => {
  await browser?.close();
  if (script && script.exitCode === null) {
    script.kill("SIGINT");
    await script.exited;
  }
  rmSync(dir, { recursive: true, force: true });
});

describe("bash scripts/start.sh --demo", () => {
  test("the terminal shows the ready summary once, with the absolute svc, and no server output", () => {
    expect(out).toContain(`http://127.0.0.1:${ports.chat}`);
    expect(out).toContain(`CLI: ${REPO}/dist/svc`);
    expect(out.match(/Try it \(demo mode/g)?.length).toBe(1);
    // Open WebUI's and the servers' own output went to the log files, not the terminal.
    expect(out).not.toContain("uvicorn");
    expect(out).not.toContain('"level":');
    expect(readFileSync(join(dir, "logs/runtime.log"), "utf8")).toContain("svc functions seeded");
  });

  test("before any chat, readiness already knows the runtime reached the demo endpoint (probed at boot, no model call)", async () => {
    let r = svcCli(["model-profiles", "readiness", "svc demo", "--workspace", "default", "--json"]);
    await waitFor(() => {
      r = svcCli(["model-profiles", "readiness", "svc demo", "--workspace", "default", "--json"]);
      return JSON.parse(r.stdout || "{}").checks?.find((c: any) => c.name === "endpoint_reached")?.detail?.includes("reached the endpoint");
    }, "readiness to report the endpoint reached", 60_000);
    expect(r.code).toBe(0);
    const json = JSON.parse(r.stdout);
    expect(json.ready).toBe(true);
    expect(json.checks.find((c: any) => c.name === "endpoint_reached")).toMatchObject({ ok: true, detail: expect.stringContaining("1 live runtime replica(s) reached the endpoint") });
    // no model call was made yet: the runtime's probe reached it
    const me = await cp("/me");
    expect((await cp(`/organizations/${me.organization.id}/audit-records?limit=50&kind=model`)).records).toEqual([]);
  });

  test("the demo model calls a tool, svc permits it and audits it under the owner's identity", async () => {
    const password = readFileSync(join(dir, "controlplane/chat-admin-password"), "utf8").trim();
    const admin = await signIn(`http://127.0.0.1:${ports.chat}`, OWNER, password);
    expect(await modelIds(`http://127.0.0.1:${ports.chat}`, admin)).toEqual(["svc.svc-demo"]);
    const turn = await chatTurn(`http://127.0.0.1:${ports.chat}`, admin, { model: "svc.svc-demo", content: "look up customer c-1", toolIds: ["acme_crm"] });
    expect(messageText(turn.message)).toContain("Ada Lovelace <ada@example.com>");

    const write = await chatTurn(`http://127.0.0.1:${ports.chat}`, admin, { model: "svc.svc-demo", content: "change the email of customer c-1 to ada@new.example", toolIds: ["acme_crm"] });
    expect(messageText(write.message)).toContain("Refused (svc.denied)");

    const me = await cp("/me");
    const owner = (await cp(`/organizations/${me.organization.id}/users?email=${encodeURIComponent(OWNER)}`)).users[0];
    await waitFor(async () => {
      const recs = (await cp(`/organizations/${me.organization.id}/audit-records?limit=50&kind=tool`)).records as any[];
      const permit = recs.find((r) => r.tool_name === "crm.lookup_customer" && r.decision === "permit");
      const deny = recs.find((r) => r.tool_name === "crm.update" && r.decision === "deny");
      return !!permit && !!deny && permit.subject.user_id === owner.id && deny.subject.user_id === owner.id;
    }, "the permit and the deny in the audit, under the owner's svc user", 60_000);
  });

  test("in Chromium: the permitted call is drawn completed, the refused write failed with the spec's refusal text", async () => {
    browser ??= await launchBrowser();
    const { page, context } = await openPage(browser);
    try {
      const password = readFileSync(join(dir, "controlplane/chat-admin-password"), "utf8").trim();
      await chatSignIn(page, chatUrl(), OWNER, password);
      await sendInNewChat(page, chatUrl(), { model: "svc.svc-demo", toolIds: ["acme_crm"], text: "look up customer c-1" });
      const lookup = await doneToolCall(page, "lookup_customer");
      await answerShows(page, "Ada Lovelace");
      expect(await callState(lookup)).toBe("completed");
      await shot(page, "chat-permitted");

      await sendInNewChat(page, chatUrl(), { model: "svc.svc-demo", toolIds: ["acme_crm"], text: "change the email of customer c-1 to ada@new.example" });
      const update = await doneToolCall(page, "update_customer");
      await answerShows(page, "The call was refused by svc: Refused (svc.denied)");
      // a red cross, not a green check; the output is the spec's refusal text, unchanged
      expect(await callState(update)).toBe("failed");
      expect(await callOutput(update)).toContain("Refused (svc.denied): ");
      await shot(page, "chat-refused");
    } finally {
      await context.close();
    }
  });

  test("in Chromium: a chat user who is not a console member is invited, follows the clickable claim link, is linked, and is permitted", async () => {
    browser ??= await launchBrowser();
    const password = readFileSync(join(dir, "controlplane/chat-admin-password"), "utf8").trim();
    const admin = await signIn(chatUrl(), OWNER, password);
    await addUser(chatUrl(), admin, { name: BOB.name, email: BOB.email, password: BOB.chatPassword });
    // the admin invites Bob (no console account): a one-time link to set a chat password
    const inv = svcCli(["users", "invite", BOB.email]);
    expect(inv.code).toBe(0);
    const inviteLink = /^link:\s+(\S+)$/m.exec(inv.stdout)?.[1];
    expect(inviteLink).toStartWith(`${cpUrl()}/invite/`);

    const { page, context } = await openPage(browser);
    try {
      await page.goto(inviteLink!);
      await page.getByLabel("Chat password", { exact: true }).fill(BOB.svcPassword);
      await page.getByLabel("The same password again", { exact: true }).fill(BOB.svcPassword);
      await page.getByRole("button", { name: "Set my chat password" }).click();
      await page.getByRole("heading", { name: "Your chat password is set" }).waitFor();

      // Bob asks in the chat: refused as unlinked, told a link was sent; the link comes in a dialog
      await chatSignIn(page, chatUrl(), BOB.email, BOB.chatPassword);
      await sendInNewChat(page, chatUrl(), { model: "svc.svc-demo", toolIds: ["acme_crm"], text: "look up customer c-1" });
      await answerShows(page, "Refused (identity.unlinked): a one-time link to link your chat account was sent to you");
      const dialog = page.getByRole("dialog", { name: "Link your chat account" });
      await dialog.waitFor({ state: "visible", timeout: 60_000 });
      const link = dialog.getByRole("link").filter({ hasText: /claim|link/i }).first();
      const href = await link.getAttribute("href");
      expect(href).toStartWith(`${cpUrl()}/claim/`);
      expect(await page.locator("#messages-container").innerText()).not.toContain("/claim/");
      await shot(page, "chat-claim-link");
      // he clicks it (a new tab, or this one)
      const opened = context.waitForEvent("page", { timeout: 10_000 }).catch(() => null);
      await link.click();
      const claimPage = (await opened) ?? page;
      await claimPage.waitForURL((u) => u.pathname.startsWith("/claim/"));
      await claimPage.getByLabel("Email you were invited with").fill(BOB.email);
      await claimPage.locator("#f-chat-password").fill(BOB.svcPassword);
      await claimPage.getByRole("button", { name: "Link with your chat password" }).click();
      await claimPage.getByRole("heading", { name: "Your chat account is linked" }).waitFor();
      expect(await claimPage.locator("main").innerText()).toContain(`Linked to ${BOB.email}`);
      // no console session came with it
      expect((await claimPage.goto(cpUrl() + "/"))!.url()).toContain("/sign-in");

      // the next call is decided under Bob's own identity, and permitted (policy demo-lookup)
      const bobUser = JSON.parse(svcCli(["users", "resolve", "--email", BOB.email, "--json"]).stdout);
      await waitFor(async () => {
        const rt = readFileSync(join(dir, "runtime-token"), "utf8").trim();
        const rev = (await (await fetch(`${cpUrl()}/api/v1/runtime/policy-bundle?version=1`, { headers: { authorization: `Bearer ${rt}` } })).json()).revision;
        const have = Bun.spawnSync(["curl", "-fsS", "--unix-socket", join(dir, "runtime/state/proxy.sock"), "-H", `authorization: Bearer ${rt}`, "http://svc-proxy/v1/policy"]).stdout.toString();
        return (JSON.parse(have || "{}").policy_revision ?? 0) >= rev;
      }, "the proxy to apply the bundle with Bob's link", 60_000);
      await page.bringToFront();
      await sendInNewChat(page, chatUrl(), { model: "svc.svc-demo", toolIds: ["acme_crm"], text: "look up customer c-1" });
      const lookup = await doneToolCall(page, "lookup_customer");
      await answerShows(page, "Ada Lovelace");
      expect(await callState(lookup)).toBe("completed");
      await shot(page, "chat-linked-permitted");
      const me = await cp("/me");
      await waitFor(async () => {
        const recs = (await cp(`/organizations/${me.organization.id}/audit-records?limit=50&kind=tool&user=${bobUser.id}`)).records as any[];
        return recs.some((r) => r.tool_name === "crm.lookup_customer" && r.decision === "permit" && r.subject.user_id === bobUser.id);
      }, "Bob's permitted call in the audit, under his svc user", 60_000);
    } finally {
      await context.close();
    }
  });

  test("in Chromium: the console's overview and audit pages show the new records (screenshots)", async () => {
    browser ??= await launchBrowser();
    const { page, context } = await openPage(browser);
    try {
      const ownerPassword = readFileSync(join(dir, "controlplane/initial-owner-password"), "utf8").trim();
      await page.goto(cpUrl() + "/sign-in");
      await page.getByLabel("Email", { exact: true }).fill(OWNER);
      await page.getByLabel("Password", { exact: true }).fill(ownerPassword);
      await page.getByRole("button", { name: "Sign in", exact: true }).click();
      await page.waitForURL((u) => u.pathname !== "/sign-in");

      await page.goto(cpUrl() + "/");
      const tools = page.getByRole("table", { name: "Top tools" });
      const users = page.getByRole("table", { name: "Top users" });
      expect(await tools.locator("tr", { hasText: "crm.lookup_customer" }).count()).toBe(1);
      expect(await tools.locator("tr", { hasText: "crm.update" }).count()).toBe(1);
      expect(await users.innerText()).toContain(OWNER);
      expect(await users.innerText()).toContain(BOB.email);
      expect(await page.locator("main").innerText()).toContain("local-chat");
      await shot(page, "console-overview");

      await page.goto(cpUrl() + "/audit?kind=tool");
      const table = page.getByRole("table", { name: "Audit records" });
      const rows = table.locator("tbody tr");
      const denied = rows.filter({ hasText: "crm.update" }).filter({ hasText: "deny" });
      expect(await denied.count()).toBeGreaterThanOrEqual(1);
      expect(await denied.first().innerText()).toContain(OWNER);
      const bobs = rows.filter({ hasText: "crm.lookup_customer" }).filter({ hasText: BOB.email });
      expect(await bobs.count()).toBeGreaterThanOrEqual(1);
      expect(await bobs.first().innerText()).toContain("permit");
      await shot(page, "console-audit");
      await page.goto(cpUrl() + "/audit?kind=model&decision=deny");
      expect(await page.getByRole("table", { name: "Audit records" }).innerText()).toContain("identity.unlinked");
      await shot(page, "console-audit-unlinked");
    } finally {
      await context.close();
    }
  });

  test("Ctrl-C stops everything once: one signal to svc run, the spool drained", async () => {
    script!.kill("SIGINT");
    expect(await script!.exited).not.toBe(null);
    const log = readFileSync(join(dir, "logs/runtime.log"), "utf8");
    const stops = log.split("\n").filter((l) => /"event":"stopped \(SIG/.test(l));
    expect(stops).toHaveLength(1);
    expect(log).toMatch(/"event":"stopped","unshipped":0/);
    expect(log).not.toContain("SIGKILL");
    const left = Bun.spawnSync(["pgrep", "-f", dir]).stdout.toString().trim();
    expect(left).toBe("");
  });
});
