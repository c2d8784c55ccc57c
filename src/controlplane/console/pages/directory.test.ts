// The lifecycle buttons of the Users and Members pages through the real app (in-process):
// disable/enable a user, remove a member through the confirmation page, revoke an API token.
// Every form carries the session's CSRF token; a refusal shows the API's problem detail.
import { describe, expect, test } from "bun:test";
import { PASSWORD, accountWithRole } from "../../auth/test-fixtures.ts";
import { issueApiToken } from "../../auth/api-tokens.ts";
import { actingAsSystem } from "../../audit/admin-events.ts";
import { type TestControlPlane, testControlPlane } from "../../testing.ts";
import { parseCookies } from "../cookies.ts";
import { PRESESSION_COOKIE } from "../csrf.ts";

const FORM = { "content-type": "application/x-www-form-urlencoded" };

async function consoleAs(cp: TestControlPlane, email = "owner@example.com") {
  const get = async (path: string, cookie: string) => cp.app.handle(new Request(`http://localhost${path}`, { headers: { cookie } }));
  const post = async (path: string, body: Record<string, string>, cookie: string) =>
    cp.app.handle(new Request(`http://localhost${path}`, { method: "POST", headers: { ...FORM, cookie }, body: new URLSearchParams(body) }));
  const first = await cp.app.handle(new Request("http://localhost/sign-in"));
  const pre = parseCookies(
    first.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; "),
  )[PRESESSION_COOKIE]!;
  const preCookie = `${PRESESSION_COOKIE}=${pre}`;
  const signed = await post("/sign-in", { email, password: PASSWORD, _csrf: pre }, preCookie);
  const session = signed.headers
    .getSetCookie()
    .find((c) => c.startsWith("svc_session="))!
    .split(";")[0]!;
  const cookie = `${preCookie}; ${session}`;
  // Every signed-in page has the sign-out form with the session's CSRF token.
  const home = await (await get("/", cookie)).text();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(home)![1]!;
  return {
    csrf,
    get: async (path: string) => {
      const res = await get(path, cookie);
      return { status: res.status, text: await res.text() };
    },
    post: async (path: string, body: Record<string, string> = {}) => {
      const res = await post(path, body, cookie);
      return { status: res.status, location: res.headers.get("location"), text: await res.text() };
    },
  };
}

describe("Users page: disable and enable", () => {
  test("a Disable button per user (form with _csrf); the post disables, the page then offers Enable", async () => {
    const cp = await testControlPlane();
    const alice = (await cp.call("POST", cp.org("/users"), { body: { email: "alice@example.com" } })).json;
    const c = await consoleAs(cp);
    const before = await c.get("/users");
    expect(before.status).toBe(200);
    const form = new RegExp(`<form method="post" action="/users/${alice.id}/disable">[^]*?name="_csrf" value="${c.csrf}"[^]*?Disable</button>`);
    expect(before.text).toMatch(form);

    expect((await c.post(`/users/${alice.id}/disable`)).status).toBe(403); // no CSRF token
    expect((await cp.call("GET", cp.org(`/users/${alice.id}`))).json.disabled).toBe(false);

    const done = await c.post(`/users/${alice.id}/disable`, { _csrf: c.csrf });
    expect(done.status).toBe(303);
    expect(done.location).toBe("/users?done=disabled");
    expect((await cp.call("GET", cp.org(`/users/${alice.id}`))).json.disabled).toBe(true);
    const after = await c.get("/users?done=disabled");
    expect(after.text).toContain("User disabled.");
    expect(after.text).toContain(`action="/users/${alice.id}/enable"`);

    expect((await c.post(`/users/${alice.id}/enable`, { _csrf: c.csrf })).location).toBe("/users?done=enabled");
    expect((await cp.call("GET", cp.org(`/users/${alice.id}`))).json.disabled).toBe(false);

    const unknown = await c.post("/users/usr_nope/disable", { _csrf: c.csrf });
    expect(unknown.status).toBe(404);
    expect(unknown.text).toContain("user &quot;usr_nope&quot; not found");
  });

  test("a member's session is refused (403) and changes nothing", async () => {
    const cp = await testControlPlane();
    const alice = (await cp.call("POST", cp.org("/users"), { body: { email: "alice@example.com" } })).json;
    const member = await accountWithRole(cp, "member", "mem@example.com");
    const c = await consoleAs(cp, member.email);
    expect((await c.get("/users")).status).toBe(403);
    expect((await c.post(`/users/${alice.id}/disable`, { _csrf: c.csrf })).status).toBe(403);
    expect((await cp.call("GET", cp.org(`/users/${alice.id}`))).json.disabled).toBe(false);
    expect((await c.post(`/members/${cp.accountId}/remove`, { _csrf: c.csrf })).status).toBe(403);
    expect((await c.post("/api-tokens/x/revoke", { _csrf: c.csrf })).status).toBe(403);
  });
});

describe("Members page: remove and API tokens", () => {
  test("Remove… leads to a confirmation page whose form removes the member and ends its access", async () => {
    const cp = await testControlPlane();
    const admin = await accountWithRole(cp, "admin", "ada@example.com");
    const c = await consoleAs(cp);
    const members = await c.get("/members");
    expect(members.text).toContain(`href="/members/${admin.accountId}/remove"`);
    const confirm = await c.get(`/members/${admin.accountId}/remove`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain("Remove ada@example.com?");
    expect(confirm.text).toContain("API tokens here are revoked");
    expect(confirm.text).toMatch(new RegExp(`<form method="post" action="/members/${admin.accountId}/remove"[^]*?name="_csrf" value="${c.csrf}"`));
    // GET changed nothing
    expect((await cp.call("GET", cp.org("/workspaces"), { token: admin.token })).status).toBe(200);

    const done = await c.post(`/members/${admin.accountId}/remove`, { _csrf: c.csrf });
    expect(done.status).toBe(303);
    expect(done.location).toBe("/members?done=removed");
    expect((await cp.call("GET", cp.org("/workspaces"), { token: admin.token })).status).toBe(401);
    expect((await c.get("/members?done=removed")).text).toContain("Member removed.");
    expect((await c.get(`/members/${admin.accountId}/remove`)).status).toBe(404);
  });

  test("removing the last owner is refused with the API's detail", async () => {
    const cp = await testControlPlane();
    const c = await consoleAs(cp);
    const refused = await c.post(`/members/${cp.accountId}/remove`, { _csrf: c.csrf });
    expect(refused.status).toBe(409);
    expect(refused.text).toContain('role="alert"');
    expect(refused.text).toContain("last owner");
    expect((await cp.call("GET", cp.org("/members"))).json.members).toHaveLength(1);
  });

  test("the API tokens section lists tokens (never the token) with Revoke buttons; Revoke refuses the token at once", async () => {
    const cp = await testControlPlane();
    const ci = await issueApiToken(cp.deps, { accountId: cp.accountId, orgId: cp.orgId, name: "deploy-bot", signIn: { at: cp.deps.now() } }, actingAsSystem(cp.deps, "controlplane"));
    const c = await consoleAs(cp);
    const page = await c.get("/members");
    expect(page.text).toContain("API tokens");
    expect(page.text).toContain("deploy-bot");
    expect(page.text).not.toContain(ci.token.slice(7));
    expect(page.text).not.toContain(cp.adminToken.slice(7));
    // the list links to a confirmation, which holds the only form that revokes
    expect(page.text).toContain(`href="/api-tokens/${ci.id}/revoke"`);
    expect(page.text).not.toContain(`action="/api-tokens/${ci.id}/revoke"`);
    const confirm = await c.get(`/api-tokens/${ci.id}/revoke`);
    expect(confirm.text).toContain("Revoke API token &quot;deploy-bot&quot;?");
    expect(confirm.text).toMatch(new RegExp(`<form method="post" action="/api-tokens/${ci.id}/revoke" class="actions">[^]*?name="_csrf" value="${c.csrf}"[^]*?Revoke token</button>`));
    expect((await cp.call("GET", cp.org("/workspaces"), { token: ci.token })).status).toBe(200); // asking revoked nothing

    expect((await c.post(`/api-tokens/${ci.id}/revoke`)).status).toBe(403); // no CSRF token
    expect((await cp.call("GET", cp.org("/workspaces"), { token: ci.token })).status).toBe(200);
    const done = await c.post(`/api-tokens/${ci.id}/revoke`, { _csrf: c.csrf });
    expect(done.status).toBe(303);
    expect(done.location).toBe("/members?done=revoked");
    expect((await cp.call("GET", cp.org("/workspaces"), { token: ci.token })).status).toBe(401);
    const after = await c.get("/members?done=revoked");
    expect(after.text).toContain("API token revoked.");
    expect(after.text).not.toContain(`action="/api-tokens/${ci.id}/revoke"`);

    const unknown = await c.post("/api-tokens/tok_nope/revoke", { _csrf: c.csrf });
    expect(unknown.status).toBe(404);
    expect(unknown.text).toContain("API token tok_nope not found");
  });
});
