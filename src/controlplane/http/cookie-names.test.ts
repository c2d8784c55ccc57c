// With an https public URL every cookie is `__Host-` prefixed, Secure, HttpOnly, SameSite=Lax,
// Path=/ and without Domain, and only the prefixed name is read. On plain-http loopback (local
// development) the names stay unprefixed and cookies are not Secure, so sign-in still works.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { defaultConfig } from "../deps.ts";
import { testControlPlane } from "../testing.ts";
import { serializeCookie } from "../console/cookies.ts";
import { type ScriptedIdp, startScriptedIdp } from "../console/scripted-idp.ts";
import { saveOidcSettings } from "../console/oidc.ts";
import { cookieName } from "./cookie-names.ts";
import { actingAsSystem } from "../audit/admin-events.ts";

const PASSWORD = "correct horse battery staple";
const FORM = { "content-type": "application/x-www-form-urlencoded" };

let idp: ScriptedIdp;
beforeAll(async () => {
  idp = await startScriptedIdp();
});
afterAll(() => idp.stop());

function attributes(setCookie: string): { name: string; value: string; attrs: string[] } {
  const [pair, ...attrs] = setCookie.split(";").map((s) => s.trim());
  const i = pair!.indexOf("=");
  return { name: pair!.slice(0, i), value: pair!.slice(i + 1), attrs };
}

async function httpsControlPlane() {
  const config = defaultConfig("https://cp.example.com");
  expect(config.secureCookies).toBe(true);
  return testControlPlane({ config: { publicUrl: config.publicUrl, secureCookies: config.secureCookies } });
}

/** Signs in through the console form; returns the Set-Cookie values seen and a Cookie header. */
async function consoleSignIn(cp: Awaited<ReturnType<typeof testControlPlane>>) {
  const first = await cp.app.handle(new Request("https://cp.example.com/sign-in"));
  const formCookie = attributes(first.headers.getSetCookie()[0]!);
  const signed = await cp.app.handle(
    new Request("https://cp.example.com/sign-in", {
      method: "POST",
      headers: { ...FORM, cookie: `${formCookie.name}=${formCookie.value}` },
      body: new URLSearchParams({ email: "owner@example.com", password: PASSWORD, _csrf: formCookie.value }),
    }),
  );
  const session = attributes(signed.headers.getSetCookie().find((c) => c.includes("svc_session="))!);
  return { formCookie, signedStatus: signed.status, session, cookie: `${formCookie.name}=${formCookie.value}; ${session.name}=${session.value}` };
}

describe("cookie names", () => {
  test("prefixed only when Secure", () => {
    expect(cookieName("svc_session", true)).toBe("__Host-svc_session");
    expect(cookieName("svc_session", false)).toBe("svc_session");
  });
  test("a __Host- cookie cannot be written without Secure or with another path", () => {
    expect(() => serializeCookie("__Host-x", "v", { secure: false })).toThrow(/Secure/);
    expect(() => serializeCookie("__Host-x", "v", { secure: true, path: "/sso" })).toThrow(/Path=\//);
    expect(serializeCookie("__Host-x", "v", { secure: true })).toBe("__Host-x=v; Path=/; HttpOnly; SameSite=Lax; Secure");
  });
});

describe("https public URL", () => {
  test("console sign-in sets __Host- cookies (Secure, HttpOnly, SameSite=Lax, Path=/, no Domain) and pages work with them", async () => {
    const cp = await httpsControlPlane();
    const { formCookie, signedStatus, session, cookie } = await consoleSignIn(cp);
    expect(signedStatus).toBe(303);
    for (const c of [formCookie, session]) {
      expect(c.name).toStartWith("__Host-");
      expect(c.attrs).toEqual(expect.arrayContaining(["Path=/", "HttpOnly", "SameSite=Lax", "Secure"]));
      expect(c.attrs.some((a) => /^domain=/i.test(a))).toBe(false);
    }
    expect(formCookie.name).toBe("__Host-svc_form");
    expect(session.name).toBe("__Host-svc_session");
    // The pages, and the API calls they make in-process, accept the prefixed session.
    const home = await cp.app.handle(new Request("https://cp.example.com/agents", { headers: { cookie } }));
    expect(home.status).toBe(200);
    expect(await home.text()).toContain("owner@example.com");
  });

  test("the API's JSON sign-in sets __Host-svc_session; the unprefixed name is not accepted", async () => {
    const cp = await httpsControlPlane();
    const res = await cp.call("POST", "/api/v1/auth/sessions", { token: null, body: { email: "owner@example.com", password: PASSWORD } });
    expect(res.status).toBe(200);
    const c = attributes(res.headers.get("set-cookie")!);
    expect(c.name).toBe("__Host-svc_session");
    expect(c.attrs.map((a) => a.toLowerCase())).toEqual(expect.arrayContaining(["path=/", "httponly", "samesite=lax", "secure"]));
    expect((await cp.call("GET", "/api/v1/me", { token: null, headers: { cookie: `__Host-svc_session=${c.value}` } })).status).toBe(200);
    // A cookie planted under the old name (a subdomain, a plain-http response) counts for nothing.
    expect((await cp.call("GET", "/api/v1/me", { token: null, headers: { cookie: `svc_session=${c.value}` } })).status).toBe(401);
    const console = await cp.app.handle(new Request("https://cp.example.com/agents", { headers: { cookie: `svc_session=${c.value}` } }));
    expect(console.status).toBe(303);
    expect(console.headers.get("location")).toStartWith("/sign-in");
  });

  test("the single sign-on flow cookie is __Host-svc_oidc with Path=/ and is read back at the callback", async () => {
    const cp = await httpsControlPlane();
    await saveOidcSettings(cp.deps, cp.orgId, { issuer: idp.issuer, clientId: "console", clientSecret: "s" }, actingAsSystem(cp.deps, "controlplane"));
    const start = await cp.app.handle(new Request(`https://cp.example.com/sso/start?org=${cp.orgId}`));
    expect(start.status).toBe(303);
    const flow = attributes(start.headers.getSetCookie().find((c) => c.includes("svc_oidc="))!);
    expect(flow.name).toBe("__Host-svc_oidc");
    expect(flow.attrs).toEqual(expect.arrayContaining(["Path=/", "HttpOnly", "SameSite=Lax", "Secure"]));
    const q = new URL(start.headers.get("location")!).searchParams;
    idp.nextIdToken = await idp.idToken({ nonce: q.get("nonce"), email: "admin@example.com", email_verified: true });
    // The account is not a member: a refusal page, but one that read the flow (not "not started here").
    const done = await cp.app.handle(new Request(`https://cp.example.com/sso/callback?state=${q.get("state")}&code=c`, { headers: { cookie: `${flow.name}=${flow.value}` } }));
    expect(await done.text()).not.toContain("not started here");
  });
});

describe("plain-http loopback (local development)", () => {
  test("unprefixed, not Secure, and sign-in works", async () => {
    const cp = await testControlPlane();
    expect(cp.deps.config.secureCookies).toBe(false);
    const first = await cp.app.handle(new Request("http://127.0.0.1:8420/sign-in"));
    const formCookie = attributes(first.headers.getSetCookie()[0]!);
    expect(formCookie.name).toBe("svc_form");
    expect(formCookie.attrs).not.toContain("Secure");
    const signed = await cp.app.handle(
      new Request("http://127.0.0.1:8420/sign-in", {
        method: "POST",
        headers: { ...FORM, cookie: `svc_form=${formCookie.value}` },
        body: new URLSearchParams({ email: "owner@example.com", password: PASSWORD, _csrf: formCookie.value }),
      }),
    );
    const session = attributes(signed.headers.getSetCookie().find((c) => c.includes("svc_session="))!);
    expect(session.name).toBe("svc_session");
    expect(session.attrs).not.toContain("Secure");
    const page = await cp.app.handle(new Request("http://127.0.0.1:8420/agents", { headers: { cookie: `svc_form=${formCookie.value}; svc_session=${session.value}` } }));
    expect(page.status).toBe(200);
  });
});
