// The README's run command in demo mode, as a newcomer runs it (issues 19 and 33): `bash
// scripts/start.sh --demo 2>&1 | tee start.log` on a terminal (test/support/terminal.py), on a
// fresh state directory, reaches a governed chat with no provider account. Then the README's
// "Try it (demo mode)" steps are followed literally in real Chromium, every name clicked, typed
// or looked for read from README.md (readme-steps.ts): the model, the Integrations menu, the
// toolkit, the tool calls the chat draws (a permitted one completed, the write failed with the
// spec's refusal), the console's audit page (one row per call), a second chat user added in
// Open WebUI's admin panel, invited with `svc users invite`, refused as unlinked, the dialog's
// "Open the link in a new tab" opening the claim page in a new tab, linked, and permitted.
// Finally Ctrl-C typed on that terminal (SIGINT to the whole foreground group, tee included)
// stops everything once, the spool drained, and the terminal shows "start: stopped (unshipped 0)".
// Screenshots go to test-artifacts/screenshots/demo-mode/ (or SVC_TEST_SCREENSHOTS).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Browser, Page } from "playwright-core";
import { REPO, freePort, waitFor } from "../support/controlplane-process.ts";
import { listening, onTerminal, processesWithEnv, type Terminal } from "../support/terminal.ts";
import { launchBrowser, openPage } from "../integration/console-browser.ts";
import { answerShows, callOutput, callState, chatSignIn, doneToolCall, newChat, send, shot, switchOnToolkit } from "./demo-browser.ts";
import { demoSteps } from "./readme-steps.ts";

setDefaultTimeout(300_000);

const dir = mkdtempSync(join(tmpdir(), "svc-demo-"));
const ports = { cp: freePort(), chat: freePort(), demo: freePort() };
const OWNER = "owner@example.com";
const steps = demoSteps();
let term: Terminal | null = null;

const chatUrl = () => `http://127.0.0.1:${ports.chat}`;
const cpUrl = () => `http://127.0.0.1:${ports.cp}`;
const BOB = { name: "Bob Chat", email: "bob@example.com", chatPassword: "bob-owui-pass-1", svcPassword: "bob-chat-pass-2" };
const secret = (name: string) => readFileSync(join(dir, "controlplane", name), "utf8").trim();

async function cp(path: string): Promise<any> {
  const res = await fetch(`${cpUrl()}/api/v1${path}`, { headers: { authorization: `Bearer ${secret("owner-api-token")}` } });
  return res.json();
}

/** The svc CLI the script printed, signed in with the owner's token. */
function svcCli(args: string[]): { code: number; stdout: string; stderr: string } {
  const r = Bun.spawnSync([join(REPO, "dist/svc"), ...args], { env: { ...process.env, SVC_CONTROL_PLANE_URL: cpUrl(), SVC_TOKEN: secret("owner-api-token") } });
  return { code: r.exitCode, stdout: r.stdout.toString(), stderr: r.stderr.toString() };
}

/** Tool records of the organization, waited for (they ship asynchronously). */
async function toolRecords(match: (recs: any[]) => boolean, what: string): Promise<any[]> {
  const me = await cp("/me");
  let recs: any[] = [];
  await waitFor(
    async () => {
      recs = (await cp(`/organizations/${me.organization.id}/audit-records?limit=100&kind=tool`)).records;
      return match(recs);
    },
    what,
    60_000,
  );
  return recs;
}

beforeAll(async () => {
  if (process.getuid?.() !== 0) throw new Error("start.sh runs the runtime as UID 10001: run this suite as root (CI does)");
  term = onTerminal(`bash scripts/start.sh --demo 2>&1 | tee ${dir}/start.log`, {
    env: {
      ...process.env,
      SVC_LOCAL_DIR: dir,
      SVC_CP_PORT: String(ports.cp),
      SVC_CHAT_PORT: String(ports.chat),
      SVC_DEMO_PORT: String(ports.demo),
      SVC_TOKEN: undefined,
      SVC_CONTROL_PLANE_URL: undefined,
    },
  });
  await term.shows("Ctrl-C stops everything.", 280_000);
});

let browser: Browser | null = null;

afterAll(async () => {
  await browser?.close();
  if (term && term.proc.exitCode === null) {
    term.ctrlC();
    await term.exited;
  }
  for (const pid of processesWithEnv(`SVC_LOCAL_DIR=${dir}`)) process.kill(pid, "SIGKILL");
  rmSync(dir, { recursive: true, force: true });
});

describe("bash scripts/start.sh --demo | tee, on a terminal", () => {
  test("the terminal shows the ready summary once, the README's steps with this run's addresses and paths, and no server output", () => {
    const out = term!.screen();
    expect(out).toContain(`http://127.0.0.1:${ports.chat}`);
    expect(out).toContain(`CLI: ${REPO}/dist/svc`);
    expect(out.match(/Try it \(demo mode\)/g)?.length).toBe(1);
    // the README's steps, as printed (the terminal turns \n into \r\n)
    const printed = out.replace(/\r\n/g, "\n");
    const expected = steps.text
      .replaceAll("http://127.0.0.1:8080", chatUrl())
      .replaceAll("http://127.0.0.1:8420", cpUrl())
      .replaceAll("`.svc-data/", `\`${dir}/`)
      .replaceAll("`svc ", `\`${REPO}/dist/svc `)
      .split("\n")
      .map((l) => (l ? `  ${l}` : l))
      .join("\n");
    expect(printed).toContain(expected);
    // the same went through tee into its log
    expect(readFileSync(join(dir, "start.log"), "utf8")).toContain(expected.split("\n")[0]!);
    // Open WebUI's and the servers' own output went to the log files, not the terminal
    expect(out).not.toContain("uvicorn");
    expect(out).not.toContain('"level":');
    expect(readFileSync(join(dir, "logs/runtime.log"), "utf8")).toContain("svc functions seeded");
  });

  test("before any chat, readiness already knows the runtime reached the demo endpoint (probed at boot, no model call)", async () => {
    let r = svcCli(["model-profiles", "readiness", steps.profile, "--workspace", "default", "--json"]);
    await waitFor(
      () => {
        r = svcCli(["model-profiles", "readiness", steps.profile, "--workspace", "default", "--json"]);
        return JSON.parse(r.stdout || "{}")
          .checks?.find((c: any) => c.name === "endpoint_reached")
          ?.detail?.includes("reached the endpoint");
      },
      "readiness to report the endpoint reached",
      60_000,
    );
    expect(r.code).toBe(0);
    const json = JSON.parse(r.stdout);
    expect(json.ready).toBe(true);
    expect(json.checks.find((c: any) => c.name === "endpoint_reached")).toMatchObject({ ok: true, detail: expect.stringContaining("1 live runtime replica(s) reached the endpoint") });
    const me = await cp("/me");
    expect((await cp(`/organizations/${me.organization.id}/audit-records?limit=50&kind=model`)).records).toEqual([]);
  });
});

describe("README 'Try it (demo mode)', followed in Chromium", () => {
  test("steps 1–5: the model, the Integrations menu and the toolkit by the README's names; the permitted call completes, the write fails with the spec's refusal", async () => {
    browser ??= await launchBrowser();
    const { page, context } = await openPage(browser);
    try {
      await chatSignIn(page, chatUrl(), OWNER, secret("chat-admin-password"));
      await newChat(page, chatUrl());
      // step 2: the model is already picked, shown by the name the README quotes
      await page.getByRole("button", { name: `Selected model: ${steps.model}`, exact: true }).waitFor({ timeout: 30_000 });
      // step 3
      await switchOnToolkit(page, steps.toolsMenu);
      // step 4
      await send(page, steps.lookup.message);
      const lookup = await doneToolCall(page, steps.lookup.call);
      await answerShows(page, "Ada Lovelace");
      expect(await callState(lookup)).toBe("completed");
      await shot(page, "chat-permitted");
      // step 5, in the same chat
      await send(page, steps.write.message);
      const update = await doneToolCall(page, steps.write.call);
      await answerShows(page, `The call was refused by svc: ${steps.write.refusal}`);
      expect(await callState(update)).toBe("failed");
      expect(await callOutput(update)).toContain(`${steps.write.refusal}: `);
      await shot(page, "chat-refused");
    } finally {
      await context.close();
    }
    // the names the README gives for what svc did: the policy, the declared tool names, the owner
    const me = await cp("/me");
    const policies = (await cp(`/organizations/${me.organization.id}/policies?workspace=default`)).policies as any[];
    const lookupPolicy = policies.find((p) => p.name === steps.lookup.policy);
    expect(lookupPolicy?.dst).toBe(`tool:${steps.lookup.declared}`);
    const owner = (await cp(`/organizations/${me.organization.id}/users?email=${encodeURIComponent(OWNER)}`)).users[0];
    await toolRecords((recs) => {
      const permit = recs.find((r) => r.tool_name === steps.lookup.declared && r.decision === "permit");
      const deny = recs.find((r) => r.tool_name === steps.write.declared && r.decision === "deny");
      return !!permit && !!deny && permit.policy_id === lookupPolicy.id && permit.subject.user_id === owner.id && deny.subject.user_id === owner.id;
    }, "the permit and the deny in the audit, under the owner's svc user, the permit by the README's policy");
    const profiles = JSON.parse(svcCli(["model-profiles", "list", "--workspace", "default", "--json"]).stdout).model_profiles as any[];
    expect(profiles.map((p) => p.display_name)).toEqual([steps.profile]);
  });

  test("step 6: the console's audit page, one row per call with its decision and outcome, under the owner", async () => {
    browser ??= await launchBrowser();
    const { page, context } = await openPage(browser);
    try {
      await consoleSignIn(page);
      await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: steps.audit.page, exact: true }).click();
      await page.waitForURL((u) => u.pathname === "/audit");
      const rows = page.getByRole("table", { name: "Audit records" }).locator("tbody tr");
      const lookup = rows.filter({ hasText: steps.lookup.declared });
      const write = rows.filter({ hasText: steps.write.declared });
      expect(await lookup.count()).toBe(1);
      expect(await write.count()).toBe(1);
      expect(await lookup.innerText()).toContain("permit");
      expect(await lookup.locator("[data-outcome]").innerText()).toContain("ok");
      expect(await write.innerText()).toContain("deny");
      expect(await write.locator("[data-outcome]").innerText()).toContain("not run");
      for (const row of [lookup, write]) expect(await row.innerText()).toContain(steps.audit.email);
      // the outcome's own record is one click away
      await lookup.locator("[data-outcome] a").click();
      await page.waitForURL(/\/audit\/rec_/);
      expect(await page.locator("main").innerText()).toContain("Decision record");
      await page.goBack();
      await shot(page, "console-audit");
      // the demo's loopback opt-in for SIEM sinks, said where a sink is made (docs/siem.md)
      await page.goto(cpUrl() + "/siem-sinks");
      expect(await page.locator("[data-try-locally]").innerText()).toContain("examples/siem-receiver/server.ts");
    } finally {
      await context.close();
    }
  });

  test("step 7: a second chat user added in Open WebUI's admin panel and invited is refused as unlinked; the dialog's button opens the claim link in a new tab; linked, they are permitted", async () => {
    browser ??= await launchBrowser();
    const s = steps.secondUser;
    const { page, context } = await openPage(browser);
    try {
      // the owner adds Bob in Open WebUI, by the README's names
      await chatSignIn(page, chatUrl(), OWNER, secret("chat-admin-password"));
      await newChat(page, chatUrl());
      await page.getByRole("button", { name: s.userMenu, exact: true }).first().click();
      await page.getByRole("menuitem", { name: s.adminPanel }).click();
      await page.getByRole("button", { name: s.addUser, exact: true }).click();
      await page.getByPlaceholder("Enter Your Full Name").fill(BOB.name);
      await page.getByPlaceholder("Enter Your Email").fill(BOB.email);
      await page.getByPlaceholder("Enter Your Password").fill(BOB.chatPassword);
      await page.getByRole("button", { name: s.save, exact: true }).click();
      await page.getByText(BOB.email).waitFor({ timeout: 30_000 });
    } finally {
      await context.close();
    }
    // `svc users invite`: a one-time link to set a chat password (Bob has no console account)
    const inv = svcCli(["users", "invite", BOB.email]);
    expect(inv.code).toBe(0);
    const inviteLink = /^link:\s+(\S+)$/m.exec(inv.stdout)?.[1];
    expect(inviteLink).toStartWith(`${cpUrl()}/invite/`);

    const bob = await openPage(browser);
    try {
      const p = bob.page;
      await p.goto(inviteLink!);
      await p.getByLabel("Chat password", { exact: true }).fill(BOB.svcPassword);
      await p.getByLabel("The same password again", { exact: true }).fill(BOB.svcPassword);
      await p.getByRole("button", { name: "Set my chat password" }).click();
      await p.getByRole("heading", { name: "Your chat password is set" }).waitFor();

      // Bob's first call, the same message as step 4: refused, and the dialog comes to him
      await chatSignIn(p, chatUrl(), BOB.email, BOB.chatPassword);
      await newChat(p, chatUrl());
      await switchOnToolkit(p, steps.toolsMenu);
      await send(p, steps.lookup.message);
      await answerShows(p, `${s.refusal}: a one-time link to link your chat account was sent to you`);
      const dialog = p.getByRole("dialog", { name: s.dialog });
      await dialog.waitFor({ state: "visible", timeout: 60_000 });
      expect(await p.locator("#messages-container").innerText()).not.toContain("/claim/");
      await shot(p, "chat-claim-dialog");
      // its primary action: the claim page in a new tab; the chat stays where it was
      const chatAt = p.url();
      const opened = bob.context.waitForEvent("page", { timeout: 10_000 });
      await dialog.getByRole("link", { name: s.open, exact: true }).click();
      const claimPage = await opened;
      await claimPage.waitForURL((u) => u.pathname.startsWith("/claim/"));
      expect(new URL(claimPage.url()).origin).toBe(cpUrl());
      expect(p.url()).toBe(chatAt);
      expect(await dialog.isVisible()).toBe(false);
      await claimPage.getByLabel("Email you were invited with").fill(BOB.email);
      await claimPage.locator("#f-chat-password").fill(BOB.svcPassword);
      await claimPage.getByRole("button", { name: s.claim }).click();
      await claimPage.getByRole("heading", { name: "Your chat account is linked" }).waitFor();
      expect(await claimPage.locator("main").innerText()).toContain(`Linked to ${BOB.email}`);
      expect((await claimPage.goto(cpUrl() + "/"))!.url()).toContain("/sign-in");

      // asked again: decided under Bob's own identity, permitted by the README's policy
      const bobUser = JSON.parse(svcCli(["users", "resolve", "--email", BOB.email, "--json"]).stdout);
      await waitFor(
        async () => {
          const rt = readFileSync(join(dir, "runtime-token"), "utf8").trim();
          const rev = (await (await fetch(`${cpUrl()}/api/v1/runtime/policy-bundle?version=1`, { headers: { authorization: `Bearer ${rt}` } })).json()).revision;
          const have = Bun.spawnSync(["curl", "-fsS", "--unix-socket", join(dir, "runtime/state/proxy.sock"), "-H", `authorization: Bearer ${rt}`, "http://svc-proxy/v1/policy"]).stdout.toString();
          return (JSON.parse(have || "{}").policy_revision ?? 0) >= rev;
        },
        "the proxy to apply the bundle with Bob's link",
        60_000,
      );
      await p.bringToFront();
      await send(p, steps.lookup.message);
      const lookup = await doneToolCall(p, steps.lookup.call);
      await answerShows(p, "Ada Lovelace");
      expect(await callState(lookup)).toBe("completed");
      await shot(p, "chat-linked-permitted");
      const me = await cp("/me");
      const policy = ((await cp(`/organizations/${me.organization.id}/policies?workspace=default`)).policies as any[]).find((x) => x.name === s.policy);
      await toolRecords(
        (recs) => recs.some((r) => r.tool_name === steps.lookup.declared && r.decision === "permit" && r.subject.user_id === bobUser.id && r.policy_id === policy.id),
        "Bob's permitted call in the audit, under his svc user, by the README's policy",
      );
    } finally {
      await bob.context.close();
    }
  });

  test("the console's overview shows the new records (screenshots)", async () => {
    browser ??= await launchBrowser();
    const { page, context } = await openPage(browser);
    try {
      await consoleSignIn(page);
      await page.goto(cpUrl() + "/");
      const tools = page.getByRole("table", { name: "Top tools" });
      const users = page.getByRole("table", { name: "Top users" });
      expect(await tools.locator("tr", { hasText: steps.lookup.declared }).count()).toBe(1);
      expect(await tools.locator("tr", { hasText: steps.write.declared }).count()).toBe(1);
      expect(await users.innerText()).toContain(OWNER);
      expect(await users.innerText()).toContain(BOB.email);
      expect(await page.locator("main").innerText()).toContain("local-chat");
      await shot(page, "console-overview");
      await page.goto(cpUrl() + "/audit?kind=model&decision=deny");
      expect(await page.getByRole("table", { name: "Audit records" }).innerText()).toContain("identity.unlinked");
      await shot(page, "console-audit-unlinked");
    } finally {
      await context.close();
    }
  });
});

describe("docs/mcp.md 'Try it in the demo'", () => {
  test("its commands, as written, put mcp-server-time (PyPI, stdio, run as UID 10001) behind svc; the chat calls it through svc's gateway; the audit has it under the owner", async () => {
    const doc = readFileSync(join(REPO, "docs/mcp.md"), "utf8");
    const section = doc.slice(doc.indexOf("## Try it in the demo"), doc.indexOf("## Layering stdio servers"));
    const commands = /```sh\n([^]*?)```/.exec(section)![1]!.trim().split("\n");
    expect(commands).toHaveLength(3);
    // the first installs from PyPI into /opt/mcp: the tests' cached venv of the same release stands in for it
    expect(commands[0]).toContain("mcp-server-time==2026.10.19");
    const venvBin = Bun.spawnSync(["bash", "scripts/mcp-servers-venv.sh"], { cwd: REPO }).stdout.toString().trim();
    for (const line of commands.slice(1)) {
      const cmd = line.replaceAll("/opt/mcp/bin", venvBin).replace(/^svc /, `${REPO}/dist/svc `).replaceAll(".svc-data/", `${dir}/`);
      const r = Bun.spawnSync(["bash", "-c", cmd], { cwd: REPO, env: { ...process.env, SVC_CONTROL_PLANE_URL: cpUrl(), SVC_TOKEN: secret("owner-api-token") } });
      expect({ cmd, code: r.exitCode, stderr: r.stderr.toString() }).toMatchObject({ cmd, code: 0 });
    }
    const me = await cp("/me");
    const inst = (await cp(`/organizations/${me.organization.id}/installations`)).installations[0];
    await waitFor(
      async () => ((await cp(`/organizations/${me.organization.id}/installations/${inst.id}/tools`)).tools as any[]).some((t) => t.name === "time.get_current_time"),
      "the proxy to start the server and register its tools",
      60_000,
    );

    const [button, item, toolkit] = /click "([^"]+)", then "([^"]+)", switch on "([^"]+)"/.exec(section.replace(/\s*\n\s*/g, " "))!.slice(1);
    const message = /send `([^`]+)`/.exec(section.replace(/\s*\n\s*/g, " "))![1]!;
    browser ??= await launchBrowser();
    const { page, context } = await openPage(browser);
    try {
      await chatSignIn(page, chatUrl(), OWNER, secret("chat-admin-password"));
      await newChat(page, chatUrl());
      await switchOnToolkit(page, { button: button!, item: item!, toolkit: toolkit! });
      await send(page, message);
      const call = await doneToolCall(page, /get_current_time/);
      expect(await callState(call)).toBe("completed");
      await answerShows(page, "Europe/Berlin");
      await shot(page, "chat-mcp-time");
    } finally {
      await context.close();
    }
    const owner = (await cp(`/organizations/${me.organization.id}/users?email=${encodeURIComponent(OWNER)}`)).users[0];
    await toolRecords(
      (recs) => recs.some((r) => r.tool_name === "time.get_current_time" && r.decision === "permit" && r.subject.user_id === owner.id),
      "the MCP call in the audit, permitted, under the owner",
    );
  });
});

async function consoleSignIn(page: Page): Promise<void> {
  await page.goto(cpUrl() + "/sign-in");
  await page.getByLabel("Email", { exact: true }).fill(OWNER);
  await page.getByLabel("Password", { exact: true }).fill(secret("initial-owner-password"));
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await page.waitForURL((u) => u.pathname !== "/sign-in");
}

describe("Ctrl-C on the terminal", () => {
  test("stops everything once with tee dying too: one signal to svc run, the spool drained, 'start: stopped (unshipped 0)' shown, no process or port left", async () => {
    term!.ctrlC();
    expect(await term!.exited).toBe(130);
    const screen = term!.screen().replace(/\r\n/g, "\n");
    expect(screen).toContain("start: stopping (the runtime ships its last audit records first)…");
    expect(screen.trimEnd()).toEndWith("start: stopped (unshipped 0)");
    expect(screen.match(/start: stopp/g)).toHaveLength(2); // once each, on the terminal itself
    const log = readFileSync(join(dir, "logs/runtime.log"), "utf8");
    expect(log.split("\n").filter((l) => /"event":"stopped \(SIG/.test(l))).toHaveLength(1);
    expect(log).toMatch(/"event":"stopped","unshipped":0/);
    expect(log).not.toContain("SIGKILL");
    await waitFor(
      async () => {
        const open = await Promise.all(Object.values(ports).map(async (port) => listening(port)));
        return processesWithEnv(`SVC_LOCAL_DIR=${dir}`).length === 0 && Bun.spawnSync(["pgrep", "-f", dir]).stdout.toString().trim() === "" && !open.includes(true);
      },
      "every process of the run (svc, Open WebUI, the demo provider) to be gone and its ports free",
      30_000,
    );
  });
});
