// CSRF checks: the comparison itself, and every console POST through the real app (in-process):
// sign-in needs the double-submit token, signed-in forms need the session's token, and a
// refused form changes nothing.
import { describe, expect, test } from "bun:test";
import { testControlPlane } from "../testing.ts";
import { parseCookies, serializeCookie } from "./cookies.ts";
import { PRESESSION_COOKIE, csrfMatches, newPresessionToken } from "./csrf.ts";

describe("csrfMatches", () => {
  const token = newPresessionToken();
  test("accepts only the same token", () => {
    expect(csrfMatches(token, token)).toBe(true);
    expect(csrfMatches(token, `${token}x`)).toBe(false);
    expect(
      csrfMatches(
        token,
        token.replace(/.$/, (c) => (c === "A" ? "B" : "A")),
      ),
    ).toBe(false);
  });
  test("refuses missing, empty and non-string values", () => {
    expect(csrfMatches(token, undefined)).toBe(false);
    expect(csrfMatches(token, "")).toBe(false);
    expect(csrfMatches(token, [token])).toBe(false);
    expect(csrfMatches(undefined, token)).toBe(false);
    expect(csrfMatches(null, "")).toBe(false);
  });
  test("refuses a too-short expected token, even when equal", () => {
    expect(csrfMatches("abc", "abc")).toBe(false);
  });
});

describe("cookies", () => {
  test("console cookies are HttpOnly and SameSite=Lax, Secure when configured", () => {
    const c = serializeCookie("svc_session", "svc_ss_x", { secure: true, maxAgeSeconds: 60 });
    expect(c).toBe("svc_session=svc_ss_x; Path=/; HttpOnly; SameSite=Lax; Max-Age=60; Secure");
    expect(serializeCookie("a", "b", { secure: false })).not.toContain("Secure");
  });
  test("parses a Cookie header; the first of a repeated name wins", () => {
    expect(parseCookies("a=1; b=x%3Dy; a=2; junk")).toEqual({ a: "1", b: "x=y" });
    expect(parseCookies(null)).toEqual({});
  });
});

const FORM = { "content-type": "application/x-www-form-urlencoded" };

async function setup() {
  const cp = await testControlPlane();
  const get = async (path: string, cookie = "") => cp.app.handle(new Request(`http://localhost${path}`, { headers: cookie ? { cookie } : {} }));
  const post = async (path: string, body: Record<string, string>, cookie = "") =>
    cp.app.handle(new Request(`http://localhost${path}`, { method: "POST", headers: { ...FORM, ...(cookie ? { cookie } : {}) }, body: new URLSearchParams(body) }));
  const first = await get("/sign-in");
  const pre = parseCookies(
    first.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; "),
  )[PRESESSION_COOKIE]!;
  const preCookie = `${PRESESSION_COOKIE}=${pre}`;
  return { cp, get, post, pre, preCookie };
}

describe("console forms", () => {
  test("sign-in refuses a form without the double-submit token, accepts it with the token", async () => {
    const { post, pre, preCookie } = await setup();
    const creds = { email: "owner@example.com", password: "correct horse battery staple" };
    const without = await post("/sign-in", creds, preCookie);
    expect(without.status).toBe(403);
    expect(without.headers.getSetCookie().some((c) => c.startsWith("svc_session="))).toBe(false);
    const otherCookie = await post("/sign-in", { ...creds, _csrf: pre }, `${PRESESSION_COOKIE}=${newPresessionToken()}`);
    expect(otherCookie.status).toBe(403);
    const ok = await post("/sign-in", { ...creds, _csrf: pre }, preCookie);
    expect(ok.status).toBe(303);
    expect(ok.headers.getSetCookie().some((c) => c.startsWith("svc_session=svc_ss_"))).toBe(true);
  });

  test("signed-in forms need the session's CSRF token; refused ones change nothing", async () => {
    const { cp, get, post, pre, preCookie } = await setup();
    const signed = await post("/sign-in", { email: "owner@example.com", password: "correct horse battery staple", _csrf: pre }, preCookie);
    const session = signed.headers
      .getSetCookie()
      .find((c) => c.startsWith("svc_session="))!
      .split(";")[0]!;
    const cookie = `${preCookie}; ${session}`;
    const page = await (await get("/agents", cookie)).text();
    const csrf = /<form method="post" action="\/agents"[^]*?name="_csrf" value="([^"]+)"/.exec(page)![1]!;
    const ws = cp.workspaceId;

    expect((await post("/agents", { name: "a", workspace: ws }, cookie)).status).toBe(403);
    expect((await post("/agents", { name: "a", workspace: ws, _csrf: pre }, cookie)).status).toBe(403); // the pre-session token is not the session's
    expect((await post("/agents", { name: "a", workspace: ws, _csrf: `${csrf}x` }, cookie)).status).toBe(403);
    expect((await cp.call("GET", cp.org("/agents"))).json.agents).toHaveLength(0);

    const ok = await post("/agents", { name: "a", workspace: ws, _csrf: csrf }, cookie);
    expect(ok.status).toBe(303);
    expect((await cp.call("GET", cp.org("/agents"))).json.agents).toHaveLength(1);
  });

  test("a signed-out form post goes to sign-in and does nothing", async () => {
    const { cp, post } = await setup();
    const res = await post("/agents", { name: "a", workspace: cp.workspaceId, _csrf: "x".repeat(32) });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toBe("/sign-in");
    expect((await cp.call("GET", cp.org("/agents"))).json.agents).toHaveLength(0);
  });
});
