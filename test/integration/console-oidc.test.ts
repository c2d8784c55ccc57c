// Console single sign-on against a real OpenID provider (oidc-provider 9.x) run locally:
// configuring it in Settings, signing in (authorization code + PKCE, ID token verified against
// the provider's JWKS), the refusals (unverified email, not a member, tampered state), and
// claim links finished through SSO, by a member and by a directory user without a console account.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { Browser, Page } from "playwright-core";
import { openStore, tables } from "../../src/controlplane/db/index.ts";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import { type OidcTestProvider, startOidcProvider } from "../support/oidc-provider.ts";
import { type SeededRuntime, alertText, api, claimLink, launchBrowser, openPage, org, ownerPassword, screenshot, seedRuntime, signIn } from "./console-browser.ts";

setDefaultTimeout(60_000);

let cp: ControlPlaneProcess;
let idp: OidcTestProvider;
let browser: Browser;
let rt: SeededRuntime;
const contexts: Array<{ close(): Promise<void> }> = [];

async function fresh(): Promise<Page> {
  const p = await openPage(browser);
  contexts.push(p.context);
  return p.page;
}

/** The provider's development login and consent pages. */
async function loginAtProvider(page: Page, login: string): Promise<void> {
  await page.waitForURL((u) => u.origin === idp.issuer);
  await page.locator("input[name=login]").fill(login);
  await page.locator("input[name=password]").fill("anything");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await page.getByRole("button", { name: "Continue" }).click();
  await page.waitForURL((u) => u.origin === cp.url);
}

beforeAll(async () => {
  cp = await startControlPlane();
  idp = await startOidcProvider({ redirectUri: `${cp.url}/sso/callback` });
  idp.accounts.set("alice", { email: "SSO.User@example.com", emailVerified: true, name: "Alice" });
  idp.accounts.set("bob", { email: "unverified@example.com", emailVerified: false });
  idp.accounts.set("carol", { email: "stranger@example.com", emailVerified: true });
  idp.accounts.set("dora", { email: "dora@example.com", emailVerified: true, name: "Dora" });
  for (const email of ["sso.user@example.com", "unverified@example.com"]) {
    const m = await api(cp, "POST", org(cp, "/members"), { email, role: "admin" });
    if (m.status !== 201 && m.status !== 200) throw new Error(`member: ${m.status} ${JSON.stringify(m.json)}`);
  }
  rt = await seedRuntime(cp);
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  for (const c of contexts) await c.close().catch(() => {});
  await browser?.close();
  await idp?.stop();
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
});

describe("single sign-on settings", () => {
  test("an owner configures the provider; a non-https issuer is refused; the client secret is stored wrapped", async () => {
    const page = await fresh();
    await signIn(page, cp, "owner@example.com", ownerPassword(cp));
    await page.goto(cp.url + "/settings");
    await page.getByLabel("Issuer").fill("http://idp.example.com");
    await page.getByLabel("Client ID").fill(idp.clientId);
    await page.getByLabel("Client secret").fill(idp.clientSecret);
    await page.getByRole("button", { name: "Save single sign-on" }).click();
    // The refusal is the answer to the form post: read it only once that page has loaded.
    await page.waitForURL((u) => u.pathname === "/settings/sso");
    expect(await alertText(page, cp)).toContain("https");

    await page.getByLabel("Issuer").fill(idp.issuer);
    await page.getByLabel("Client secret").fill(idp.clientSecret);
    await page.getByRole("button", { name: "Save single sign-on" }).click();
    await page.waitForURL(/done=sso-saved/);
    await expect(
      page
        .locator("section", { has: page.locator("#sso-h") })
        .locator("dd")
        .first()
        .textContent(),
    ).resolves.toBe("configured");
    await screenshot(page, "settings-sso");

    const store = openStore(cp.database);
    const o = tables(store.db).oidcConfigs;
    const [row] = await store.db.select().from(o).where(eq(o.orgId, cp.orgId));
    await store.close();
    expect(row!.issuer).toBe(idp.issuer);
    expect(row!.wrappedClientSecret).toStartWith("kms1:");
    expect(row!.wrappedClientSecret).not.toContain(idp.clientSecret);
  });

  test("a member cannot change single sign-on", async () => {
    await api(cp, "POST", org(cp, "/members"), { email: "plain.member@example.com", role: "member", password: "plain member password" });
    const page = await fresh();
    await signIn(page, cp, "plain.member@example.com", "plain member password");
    const res = await page.goto(cp.url + "/settings");
    expect(res!.status()).toBe(403);
  });
});

describe("signing in with single sign-on", () => {
  test("a member with a verified email signs in through the provider", async () => {
    const page = await fresh();
    await page.goto(`${cp.url}/sign-in?org=${cp.orgId}`);
    await page.getByRole("button", { name: "Continue with Acme single sign-on" }).click();
    await loginAtProvider(page, "alice");
    expect(new URL(page.url()).pathname).toBe("/");
    await expect(page.locator("header").textContent()).resolves.toContain("sso.user@example.com");
    await expect(page.locator("h1").textContent()).resolves.toBe("Overview");
  });

  test("an email the provider has not verified is refused", async () => {
    const page = await fresh();
    await page.goto(`${cp.url}/sso/start?org=${cp.orgId}`);
    await loginAtProvider(page, "bob");
    expect(await alertText(page, cp)).toContain("has not verified unverified@example.com");
    expect((await page.context().cookies()).some((c) => c.name === "svc_session")).toBe(false);
    await screenshot(page, "sso-refused");
  });

  test("a verified email that is not a member of the organization is refused", async () => {
    const page = await fresh();
    await page.goto(`${cp.url}/sso/start?org=${cp.orgId}`);
    await loginAtProvider(page, "carol");
    expect(await alertText(page, cp)).toContain("stranger@example.com is not a member");
    expect((await page.context().cookies()).some((c) => c.name === "svc_session")).toBe(false);
  });

  test("a callback that does not match the started attempt is refused", async () => {
    const page = await fresh();
    const noFlow = await page.goto(`${cp.url}/sso/callback?state=abc&code=def`);
    expect(noFlow!.status()).toBe(400);
    expect(await alertText(page, cp)).toContain("not started here");
    // start a real attempt (sets the sealed flow cookie), then come back with a forged state
    await page.goto(`${cp.url}/sso/start?org=${cp.orgId}`);
    await page.waitForURL((u) => u.origin === idp.issuer);
    const forged = await page.goto(`${cp.url}/sso/callback?state=forged&code=whatever`);
    expect(forged!.status()).toBe(400);
    expect(await alertText(page, cp)).toContain("state mismatch");
  });

  test("an organization without single sign-on says so", async () => {
    const page = await fresh();
    const res = await page.goto(`${cp.url}/sso/start?org=org_01NOTCONFIGURED000000000000`);
    expect(res!.status()).toBe(400);
    expect(await alertText(page, cp)).toContain("not configured");
  });
});

describe("claim link with single sign-on", () => {
  const linkedTo = async (remoteUserId: string) => {
    const ids = await api(cp, "GET", org(cp, "/remote-identities"));
    return (ids.json.remote_identities as Array<{ remote_user_id: string; user_id: string | null }>).find((r) => r.remote_user_id === remoteUserId)?.user_id ?? null;
  };

  test("a member links through the provider from the link's page, without a console session", async () => {
    const url = await claimLink(cp, rt, "chat-sso-7");
    const page = await fresh();
    await page.goto(url);
    await page.getByRole("button", { name: "Continue with Acme single sign-on" }).click();
    await loginAtProvider(page, "alice");
    await page.locator("h1", { hasText: "Your chat account is linked" }).waitFor();
    const user = await api(cp, "GET", org(cp, `/users/${encodeURIComponent("sso.user@example.com")}`));
    expect(user.status).toBe(200);
    expect(await linkedTo("chat-sso-7")).toBe(user.json.id);
    expect((await page.context().cookies()).some((c) => c.name.endsWith("svc_session"))).toBe(false);
  });

  test("a directory user without a console account links through the provider and gets no console access", async () => {
    const created = await api(cp, "POST", org(cp, "/users"), { email: "dora@example.com", display_name: "Dora" });
    expect(created.status).toBe(201);
    const url = await claimLink(cp, rt, "chat-dora");
    const page = await fresh();
    await page.goto(url);
    await page.getByRole("button", { name: "Continue with Acme single sign-on" }).click();
    await loginAtProvider(page, "dora");
    await page.locator("h1", { hasText: "Your chat account is linked" }).waitFor();
    await screenshot(page, "claim-linked-sso");
    expect(await linkedTo("chat-dora")).toBe(created.json.id);
    expect((await page.context().cookies()).some((c) => c.name.endsWith("svc_session"))).toBe(false);
    await page.goto(cp.url + "/");
    expect(new URL(page.url()).pathname).toBe("/sign-in");
    const members = await api(cp, "GET", org(cp, "/members"));
    expect(members.json.members.some((m: { email: string }) => m.email === "dora@example.com")).toBe(false);
  });
});
