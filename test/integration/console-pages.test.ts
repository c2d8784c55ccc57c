// The console in real Chromium against a real control-plane process: each page's main action
// and its refusal, roles, CSRF, no-JavaScript use, keyboard access, and screenshots of the
// main pages (test-artifacts/screenshots/).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import type { Browser } from "playwright-core";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import {
  type SeededRuntime,
  type TestPage,
  ageRecipient,
  api,
  auditRecord,
  claimLink,
  cookieHeader,
  launchBrowser,
  openPage,
  org,
  ownerPassword,
  screenshot,
  seedRuntime,
  shipRecords,
  signIn,
  alertText,
} from "./console-browser.ts";

setDefaultTimeout(60_000);

const MEMBER = { email: "member@example.com", password: "member password 123" };

let cp: ControlPlaneProcess;
let browser: Browser;
let owner: TestPage;
let rt: SeededRuntime;
const opened: TestPage[] = [];

async function fresh(opts: { javaScript?: boolean } = {}): Promise<TestPage> {
  const p = await openPage(browser, opts);
  opened.push(p);
  return p;
}

beforeAll(async () => {
  cp = await startControlPlane();
  browser = await launchBrowser();
  rt = await seedRuntime(cp);
  const m = await api(cp, "POST", org(cp, "/members"), { email: MEMBER.email, role: "member", password: MEMBER.password });
  if (m.status !== 201 && m.status !== 200) throw new Error(`member: ${m.status} ${JSON.stringify(m.json)}`);
  owner = await fresh();
}, 60_000);

afterAll(async () => {
  for (const p of opened) await p.context.close().catch(() => {});
  await browser?.close();
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
});

describe("sign-in", () => {
  test("a wrong password is refused on the page; the right one opens the overview with a secure-by-default session cookie", async () => {
    const { page, context } = owner;
    await page.goto(cp.url + "/agents");
    expect(new URL(page.url()).pathname).toBe("/sign-in");
    await screenshot(page, "sign-in");
    await page.getByLabel("Email", { exact: true }).fill("owner@example.com");
    await page.getByLabel("Password", { exact: true }).fill("not the password");
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    expect(await alertText(page, cp)).toContain("wrong email or password");
    await page.getByLabel("Password", { exact: true }).fill(ownerPassword(cp));
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    await page.waitForURL(`${cp.url}/agents`);
    const session = (await context.cookies()).find((c) => c.name === "svc_session")!;
    expect(session.httpOnly).toBe(true);
    expect(session.sameSite).toBe("Lax");
    // plain http on loopback is the one case without Secure (deps.config.secureCookies)
    expect(session.secure).toBe(false);
  });

  test("the overview shows each installation's last heartbeat, proxy state, policy revision and tool count", async () => {
    const { page } = owner;
    await page.goto(cp.url + "/");
    const row = page.locator("tr", { hasText: "helpdesk" }).first();
    await expect(row.textContent()).resolves.toContain("ready");
    const cells = await row.locator("td").allTextContents();
    expect(cells[4]!.trim()).toBe("7"); // policy revision
    expect(cells[5]!.trim()).toBe("3"); // tool count from the heartbeat
    expect(await row.locator("time").count()).toBe(1); // last heartbeat
    await screenshot(page, "overview");
  });
});

describe("agents", () => {
  test("an admin creates an agent and sees its id", async () => {
    const { page } = owner;
    await page.goto(cp.url + "/agents");
    await page.getByLabel("Name", { exact: true }).fill("sales assistant");
    await page.getByLabel("Description").fill("answers <b>sales</b> questions");
    await page.getByRole("button", { name: "Create agent" }).click();
    await page.waitForURL(/\/agents\?created=agt_/);
    const id = new URL(page.url()).searchParams.get("created")!;
    await expect(page.getByRole("status").textContent()).resolves.toContain(id);
    // escaped, not markup
    await expect(page.locator("td", { hasText: "answers <b>sales</b> questions" }).count()).resolves.toBe(1);
    const listed = await api(cp, "GET", org(cp, "/agents"));
    expect(listed.json.agents.map((a: { id: string }) => a.id)).toContain(id);
    await screenshot(page, "agents");
  });

  test("a member is refused admin work: the page answers 403 and a forged POST creates nothing", async () => {
    const { page, context } = await fresh();
    await signIn(page, cp, MEMBER.email, MEMBER.password);
    await expect(page.locator("h1").textContent()).resolves.toContain("Welcome");
    expect(await page.locator("nav[aria-label=Console]").count()).toBe(0);
    const res = await page.goto(cp.url + "/agents");
    expect(res!.status()).toBe(403);
    expect(await alertText(page, cp)).toContain('"member"');
    await screenshot(page, "member-refused");
    // A POST with the member's own valid session and CSRF token is still refused on the server.
    await page.goto(cp.url + "/");
    const csrf = await page.locator('form[action="/sign-out"] input[name=_csrf]').getAttribute("value");
    const before = (await api(cp, "GET", org(cp, "/agents"))).json.agents.length;
    const post = await fetch(cp.url + "/agents", {
      method: "POST",
      redirect: "manual",
      headers: { cookie: await cookieHeader(context), "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ _csrf: csrf!, name: "member agent", workspace: "default" }),
    });
    expect(post.status).toBe(403);
    expect((await api(cp, "GET", org(cp, "/agents"))).json.agents.length).toBe(before);
    // and the JSON API refuses the member's session too
    const direct = await fetch(cp.url + org(cp, "/agents"), { headers: { cookie: await cookieHeader(context) } });
    expect(direct.status).toBe(403);
  });

  test("a form without the session's CSRF token changes nothing", async () => {
    const cookie = await cookieHeader(owner.context);
    const before = (await api(cp, "GET", org(cp, "/agents"))).json.agents.length;
    for (const token of [null, "wrong-token-wrong-token-wrong"]) {
      const body = new URLSearchParams({ name: "csrf agent", workspace: "default" });
      if (token) body.set("_csrf", token);
      const res = await fetch(cp.url + "/agents", { method: "POST", redirect: "manual", headers: { cookie, "content-type": "application/x-www-form-urlencoded" }, body });
      expect(res.status).toBe(403);
      expect(await res.text()).toContain("Nothing was changed");
    }
    expect((await api(cp, "GET", org(cp, "/agents"))).json.agents.length).toBe(before);
  });
});

describe("runtime pages", () => {
  test("installations, model profiles, policies, users, groups and identities render the API's data", async () => {
    const { page } = owner;
    await page.goto(cp.url + "/installations");
    await expect(page.locator("table").textContent()).resolves.toContain("helpdesk");
    await page.getByRole("link", { name: "helpdesk", exact: true }).click();
    await page.waitForURL(/\/installations\/inst_/);
    await expect(page.locator("h1").textContent()).resolves.toBe("helpdesk");
    await expect(page.locator("main").textContent()).resolves.toContain(rt.replicaId);
    await screenshot(page, "installation");

    // a policy created on the page, bound to the agent
    await page.goto(cp.url + "/policies");
    await page.getByLabel("Name", { exact: true }).fill("support may look up");
    await page.getByLabel("Who (source)").fill("group:support");
    await page.getByLabel("What (destination)").fill("tool:crm.lookup");
    await page.getByLabel("Agent").selectOption(rt.agentId);
    await page.getByRole("button", { name: "Create policy" }).click();
    // no installation registered crm.lookup: saved, and the API's warning is on the page
    await expect(page.locator("[data-warnings]").textContent()).resolves.toContain('tool "crm.lookup" is not registered');
    await expect(page.getByRole("row", { name: /support may look up/ }).textContent()).resolves.toContain("tool not registered");
    const pol = (await api(cp, "GET", org(cp, "/policies"))).json.policies.find((p: { name: string }) => p.name === "support may look up");
    expect(pol.agent_id).toBe(rt.agentId);
    // a conditional shadow deny (issue 17): condition and mode from the form, shown in the list
    await page.getByLabel("Name", { exact: true }).fill("no big lookups");
    await page.getByLabel("Who (source)").fill("*");
    await page.getByLabel("What (destination)").fill("tool:crm.lookup");
    await page.getByLabel("Effect").selectOption("deny");
    await page.getByLabel("Condition").fill("args.limit > 100");
    await page.getByLabel("Mode").selectOption("shadow");
    await page.getByRole("button", { name: "Create policy" }).click();
    await page.getByRole("row", { name: /no big lookups/ }).waitFor();
    const shadow = (await api(cp, "GET", org(cp, "/policies"))).json.policies.find((p: { name: string }) => p.name === "no big lookups");
    expect([shadow.effect, shadow.condition, shadow.mode]).toEqual(["deny", "args.limit > 100", "shadow"]);
    const table = (await page.getByRole("table", { name: "Policies" }).textContent()) ?? "";
    expect(table).toContain("args.limit > 100");
    expect(table).toContain("shadow");
    expect(await page.getByRole("link", { name: "Recent decisions of no big lookups" }).getAttribute("href")).toBe(`/audit?policy=${shadow.id}`);
    await expect(page.getByRole("region", { name: "What shadow policies would have changed" }).textContent()).resolves.toContain("No recent call would have been decided differently");
    // a condition with a type error is refused, naming the position
    await page.getByLabel("Name", { exact: true }).fill("typo");
    await page.getByLabel("Who (source)").fill("*");
    await page.getByLabel("What (destination)").fill("tool:crm.lookup");
    await page.getByLabel("Condition").fill("args.limit > 'x' + 1");
    await page.getByRole("button", { name: "Create policy" }).click();
    expect(await alertText(page, cp)).toContain("line 1, column 14");
    // refusal: a bad pattern is explained by the service
    await page.getByLabel("Name", { exact: true }).fill("broken");
    await page.getByLabel("Who (source)").fill("nobody");
    await page.getByLabel("What (destination)").fill("tool:x");
    await page.getByRole("button", { name: "Create policy" }).click();
    expect(await alertText(page, cp)).toMatch(/src|source|pattern/i);
    await screenshot(page, "policies");

    await page.goto(cp.url + "/model-profiles");
    expect(await page.locator("h1").textContent()).toBe("Model profiles");
    for (const [path, heading] of [
      ["/users", "Users"],
      ["/groups", "Groups"],
      ["/identities", "Linked identities"],
      ["/members", "Console members"],
    ] as const) {
      const res = await page.goto(cp.url + path);
      expect(res!.status()).toBe(200);
      expect(await page.locator("h1").textContent()).toBe(heading);
      expect(await page.getByRole("alert").count()).toBe(0);
    }
    await page.goto(cp.url + "/members");
    // The page has two tables (members, API tokens): read the members one.
    await expect(page.getByRole("table", { name: "Members", exact: true }).textContent()).resolves.toContain(MEMBER.email);
  });
});

describe("audit keys and escrow", () => {
  test("escrow is refused with an explanation while no customer key is active", async () => {
    const { page } = owner;
    await page.goto(cp.url + "/settings");
    await expect(page.locator("#escrow-needs-key").textContent()).resolves.toContain("at least one customer audit key is active");
    await page.getByRole("button", { name: "Turn escrow on" }).click();
    const alert = await alertText(page, cp);
    expect(alert).toContain("at least one customer audit key is active");
    expect((await api(cp, "GET", org(cp, "/settings"))).json.escrow_enabled).toBe(false);
    await screenshot(page, "settings-escrow-refused");
  });

  test("the browser checks the age1 prefix before sending", async () => {
    const { page } = owner;
    await page.goto(cp.url + "/audit-keys");
    await page.getByLabel("Name", { exact: true }).fill("ssh key by mistake");
    const input = page.getByLabel("Public key (age recipient)");
    await input.fill("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB");
    await page.getByRole("button", { name: "Register key" }).click();
    expect(new URL(page.url()).pathname).toBe("/audit-keys");
    expect(await input.evaluate((el: HTMLInputElement) => el.validity.valid)).toBe(false);
    // the message comes from the console's script (custom validity), on top of the pattern attribute
    expect(await input.evaluate((el: HTMLInputElement) => el.validationMessage)).toContain("Paste the recipient line");
    expect(await input.getAttribute("pattern")).toBe("age1[^\\s]+");
    expect((await api(cp, "GET", org(cp, "/audit-encryption-keys"))).json.keys.length).toBe(0);
  });

  test("the service refuses a key that passes the prefix check but is not an X25519 recipient", async () => {
    const { page } = owner;
    await page.goto(cp.url + "/audit-keys");
    await page.getByLabel("Name", { exact: true }).fill("typo key");
    await page.getByLabel("Public key (age recipient)").fill("age1thisisnotarealrecipient");
    await page.getByRole("button", { name: "Register key" }).click();
    expect(await alertText(page, cp)).toMatch(/recipient/i);
    expect((await api(cp, "GET", org(cp, "/audit-encryption-keys"))).json.keys.length).toBe(0);
    await screenshot(page, "audit-keys-refused");
  });

  test("a key is registered, escrow can then be switched on, and disabling asks first and says it is permanent", async () => {
    const { page } = owner;
    const recipient = await ageRecipient();
    await page.goto(cp.url + "/audit-keys");
    await page.getByLabel("Name", { exact: true }).fill("security team");
    await page.getByLabel("Public key (age recipient)").fill(recipient);
    await page.getByRole("button", { name: "Register key" }).click();
    await page.waitForURL(/done=registered/);
    const row = page.locator("tr", { hasText: "security team" });
    await expect(row.textContent()).resolves.toContain("active");
    await screenshot(page, "audit-keys");

    await page.goto(cp.url + "/settings");
    await page.getByRole("button", { name: "Turn escrow on" }).click();
    await page.waitForURL(/done=escrow-on/);
    expect((await api(cp, "GET", org(cp, "/settings"))).json.escrow_enabled).toBe(true);
    await screenshot(page, "settings");

    await page.goto(cp.url + "/audit-keys");
    await page.getByRole("link", { name: "Disable key security team" }).click();
    await page.waitForURL(/\/disable$/);
    const main = await page.locator("main").textContent();
    expect(main).toContain("Disabling is permanent");
    expect(main).toContain("cannot be undone");
    const keyId = (await api(cp, "GET", org(cp, "/audit-encryption-keys"))).json.keys[0].id;
    expect((await api(cp, "GET", org(cp, `/audit-encryption-keys/${keyId}`))).json.status).toBe("active"); // asking changed nothing
    await screenshot(page, "audit-key-disable-confirm");
    await page.getByRole("button", { name: "Disable permanently" }).click();
    await page.waitForURL(/done=disabled/);
    await expect(page.locator("tr", { hasText: "security team" }).textContent()).resolves.toContain("disabled");
    expect((await api(cp, "GET", org(cp, `/audit-encryption-keys/${keyId}`))).json.status).toBe("disabled");
    expect(await page.getByRole("link", { name: "Disable key security team" }).count()).toBe(0);
  });
});

describe("audit view", () => {
  test("search by tool and decision; records show key ids or digest-only, never ciphertext", async () => {
    const keyId = "key_01JTESTKEY0000000000000000";
    // Recent days: the control plane refuses records older than its window (90 days).
    const day = (ago: number) => new Date(Date.now() - ago * 86_400_000).toISOString().slice(0, 10);
    await shipRecords(cp, rt, [
      auditRecord(rt, cp, { tool: "crm.lookup", decision: "permit", keyIds: [keyId, "key_01JTESTKEY0000000000000001"], ts: `${day(3)}T10:00:00Z` }),
      auditRecord(rt, cp, { tool: "crm.lookup", decision: "deny", ts: `${day(3)}T11:00:00Z` }),
      auditRecord(rt, cp, { tool: "mail.send", decision: "permit", ts: `${day(2)}T09:00:00Z` }),
    ]);
    const { page } = owner;
    await page.goto(cp.url + "/audit");
    expect(await page.locator("tbody tr").count()).toBe(3);
    await page.getByLabel("Tool name").fill("crm.lookup");
    await page.getByLabel("Decision").selectOption("permit");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/tool=crm.lookup/);
    const rows = page.locator("tbody tr");
    expect(await rows.count()).toBe(1);
    const text = (await rows.first().textContent())!;
    expect(text).toContain("encrypted to 2 keys");
    expect(text).toContain(keyId);
    await screenshot(page, "audit");

    await page.getByLabel("Decision").selectOption("deny");
    await page.getByRole("button", { name: "Search" }).click();
    await page.waitForURL(/decision=deny/);
    expect(await rows.count()).toBe(1);
    await expect(rows.first().textContent()).resolves.toContain("digest-only");

    // time and installation filters
    await page.goto(`${cp.url}/audit?from=${day(2)}T00:00&installation=${rt.installationId}`);
    expect(await rows.count()).toBe(1);
    await expect(rows.first().textContent()).resolves.toContain("mail.send");

    const html = await (await fetch(`${cp.url}/audit`, { headers: { cookie: await cookieHeader(owner.context) } })).text();
    expect(html).not.toContain("SECRETCIPHERTEXTMARKER");
    expect(html).not.toContain(Buffer.from("age-encryption.org/v1\n-> X25519 SECRETCIPHERTEXTMARKER\n").toString("base64"));
    expect(html).not.toContain("/ciphertext");
  });
});

describe("svc login approval", () => {
  test("the page shows the user code; an admin approves and the CLI's poll then gets a token", async () => {
    const lr = await api(cp, "POST", "/api/v1/auth/login-requests", {}, null);
    expect(lr.status).toBe(201);
    const { page } = owner;
    await page.goto(lr.json.approve_url);
    await expect(page.locator(".user-code").textContent()).resolves.toBe(lr.json.user_code);
    const pending = await api(cp, "POST", `/api/v1/auth/login-requests/${lr.json.id}/token`, { poll_secret: lr.json.poll_secret }, null);
    expect(pending.status).toBe(428);
    await screenshot(page, "login-approve");
    await page.getByRole("button", { name: "Approve svc login" }).click();
    await page.waitForURL(/done=approved/);
    await expect(page.getByRole("status").textContent()).resolves.toContain("Approved");
    // Like the CLI, poll no faster than the advertised interval (faster polls answer 429).
    await Bun.sleep(lr.json.interval_seconds * 1000);
    const token = await api(cp, "POST", `/api/v1/auth/login-requests/${lr.json.id}/token`, { poll_secret: lr.json.poll_secret }, null);
    expect(token.status).toBe(200);
    expect(token.json.token).toStartWith("svc_at_");
  });

  test("a member cannot approve a login request", async () => {
    const lr = await api(cp, "POST", "/api/v1/auth/login-requests", {}, null);
    const { page } = await fresh();
    await signIn(page, cp, MEMBER.email, MEMBER.password, `/sign-in?next=${encodeURIComponent(`/login/approve?request=${lr.json.id}`)}`);
    expect(new URL(page.url()).pathname).toBe("/login/approve");
    expect(await page.getByRole("button", { name: "Approve svc login" }).count()).toBe(0);
    expect(await alertText(page, cp)).toContain("Only owners and admins");
    const poll = await api(cp, "POST", `/api/v1/auth/login-requests/${lr.json.id}/token`, { poll_secret: lr.json.poll_secret }, null);
    expect(poll.status).toBe(428);
  });
});

describe("claim links", () => {
  test("the front-end user signs in on the link and is linked; the used link is explained", async () => {
    const url = await claimLink(cp, rt, "chat-user-42", MEMBER.email);
    const { page } = await fresh();
    await page.goto(url);
    await expect(page.locator("h1").textContent()).resolves.toBe("Link your chat account");
    await expect(page.locator("main").textContent()).resolves.toContain("chat-user-42");
    // The front end's name and email are self-declared: neither shown as the reader's identity nor pre-filled.
    expect(await page.getByLabel("Email", { exact: true }).inputValue()).toBe("");
    await expect(page.locator("main").textContent()).resolves.not.toContain("Chat Person");
    await expect(page.getByRole("note").textContent()).resolves.toContain("Use this link only if you asked for it in the chat just now.");
    await screenshot(page, "claim");
    await page.getByLabel("Email", { exact: true }).fill(MEMBER.email);
    await page.getByLabel("Password", { exact: true }).fill("wrong password here");
    await page.getByRole("button", { name: "Sign in and link" }).click();
    expect(await alertText(page, cp)).toContain("wrong email or password");
    await page.getByLabel("Password", { exact: true }).fill(MEMBER.password);
    await page.getByRole("button", { name: "Sign in and link" }).click();
    await page.locator("h1", { hasText: "Your chat account is linked" }).waitFor();
    await screenshot(page, "claim-linked");

    const ids = await api(cp, "GET", org(cp, "/remote-identities"));
    const linked = ids.json.remote_identities.find((r: { remote_user_id: string }) => r.remote_user_id === "chat-user-42");
    expect(linked).toBeTruthy();
    const user = await api(cp, "GET", org(cp, `/users/${encodeURIComponent(MEMBER.email)}`));
    expect(user.status).toBe(200);

    const again = await page.goto(url);
    expect(again!.status()).toBe(410);
    await expect(page.locator("h1").textContent()).resolves.toBe("This link was already used");
    await screenshot(page, "claim-used");

    const bogus = await page.goto(`${cp.url}/claim/svc_cl_notarealtoken`);
    expect(bogus!.status()).toBe(404);
    await expect(page.locator("h1").textContent()).resolves.toBe("This link is not valid");
  });

  test("a chat user who is not a console member: invited, sets a chat password, links with it; no console access", async () => {
    const inv = await api(cp, "POST", org(cp, "/invites"), { email: "invitee@example.com" });
    expect(inv.status).toBe(201);
    const { page } = await fresh();
    await page.goto(inv.json.url);
    await expect(page.locator("h1").textContent()).resolves.toBe("Set your chat password");
    await expect(page.locator("main").textContent()).resolves.toContain("It does not sign you in to the console");
    await screenshot(page, "invite");
    await page.getByLabel("Chat password", { exact: true }).fill("invitee chat password");
    await page.getByLabel("The same password again", { exact: true }).fill("invitee chat password");
    await page.getByRole("button", { name: "Set my chat password" }).click();
    await page.locator("h1", { hasText: "Your chat password is set" }).waitFor();

    // the claim page says what to do without a console account, and takes the chat password
    const url = await claimLink(cp, rt, "chat-invitee");
    await page.goto(url);
    const form = page.getByRole("form", { name: "Link with your chat password" });
    await expect(form.textContent()).resolves.toContain("No console account?");
    await expect(form.textContent()).resolves.toContain("svc users invite");
    await screenshot(page, "claim-chat-password");
    await page.getByLabel("Email you were invited with").fill("invitee@example.com");
    await page.getByLabel("Chat password", { exact: true }).fill("invitee chat password");
    await page.getByRole("button", { name: "Link with your chat password" }).click();
    await page.locator("h1", { hasText: "Your chat account is linked" }).waitFor();
    const ids = await api(cp, "GET", org(cp, "/remote-identities"));
    const linked = ids.json.remote_identities.find((r: { remote_user_id: string }) => r.remote_user_id === "chat-invitee");
    const user = await api(cp, "GET", org(cp, "/users/invitee%40example.com"));
    expect(linked.user_id).toBe(user.json.id);
    // no console access: the overview sends to sign-in, and the chat password does not sign in
    await page.goto(`${cp.url}/`);
    expect(new URL(page.url()).pathname).toBe("/sign-in");
    await page.getByLabel("Email", { exact: true }).fill("invitee@example.com");
    await page.getByLabel("Password", { exact: true }).fill("invitee chat password");
    await page.getByRole("button", { name: "Sign in", exact: true }).click();
    expect(await alertText(page, cp)).toContain("wrong email or password");
  });

  test("signed in already, linking takes an explicit button press", async () => {
    const url = await claimLink(cp, rt, "chat-user-43");
    const { page } = owner;
    await page.goto(url);
    expect(await page.getByLabel("Password", { exact: true }).count()).toBe(0);
    await page.getByRole("button", { name: /Link my chat account to owner@example.com/ }).click();
    await page.locator("h1", { hasText: "Your chat account is linked" }).waitFor();
    const ids = await api(cp, "GET", org(cp, "/remote-identities"));
    expect(ids.json.remote_identities.some((r: { remote_user_id: string }) => r.remote_user_id === "chat-user-43")).toBe(true);
  });
});

describe("quality", () => {
  test("pages work without JavaScript: sign in and create an agent", async () => {
    const { page } = await fresh({ javaScript: false });
    await signIn(page, cp, "owner@example.com", ownerPassword(cp));
    await page.goto(cp.url + "/agents");
    await page.getByLabel("Name", { exact: true }).fill("no-js agent");
    await page.getByRole("button", { name: "Create agent" }).click();
    await page.waitForURL(/created=agt_/);
    expect((await api(cp, "GET", org(cp, "/agents"))).json.agents.some((a: { name: string }) => a.name === "no-js agent")).toBe(true);
  });

  test("keyboard: the first Tab reaches the skip link, focus is visible, landmarks are present", async () => {
    const { page } = owner;
    await page.goto(cp.url + "/audit-keys");
    await page.keyboard.press("Tab");
    const focused = await page.evaluate(() => {
      const el = document.activeElement as HTMLElement;
      const s = getComputedStyle(el);
      return { text: el.textContent, outline: s.outlineStyle, width: s.outlineWidth };
    });
    expect(focused.text).toBe("Skip to main content");
    expect(focused.outline).not.toBe("none");
    expect(parseFloat(focused.width)).toBeGreaterThanOrEqual(2);
    expect(await page.locator("header").count()).toBe(1);
    expect(await page.locator("nav[aria-label=Console]").count()).toBe(1);
    expect(await page.locator("main#main").count()).toBe(1);
    // every form control has a label
    const unlabelled = await page.evaluate(() => Array.from(document.querySelectorAll("input:not([type=hidden]), select, textarea")).filter((el) => !(el as HTMLInputElement).labels?.length).length);
    expect(unlabelled).toBe(0);
  });

  test("nothing is loaded from the internet and pages send a strict content security policy", async () => {
    const p = await fresh();
    await signIn(p.page, cp, "owner@example.com", ownerPassword(cp));
    for (const path of ["/", "/agents", "/audit", "/audit-keys", "/settings"]) await p.page.goto(cp.url + path);
    expect(p.offsite).toEqual([]);
    const res = await fetch(cp.url + "/sign-in");
    expect(res.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
  });

  test("signing out ends the session", async () => {
    const p = await fresh();
    await signIn(p.page, cp, "owner@example.com", ownerPassword(cp));
    const cookie = await cookieHeader(p.context);
    await p.page.getByRole("button", { name: "Sign out" }).click();
    await p.page.waitForURL(/\/sign-in\?done=signed-out/);
    const res = await fetch(cp.url + "/agents", { headers: { cookie }, redirect: "manual" });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toStartWith("/sign-in");
  });
});
