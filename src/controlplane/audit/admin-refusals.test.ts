// Refusals in the admin trail (issue 27): a 401 or a 403 on an admin route of an existing
// organization is recorded once, by the HTTP hook, naming who tried (anonymous for a 401) from
// which address; a made-up organization records nothing; the console's own refusals count
// once; and the bound holds: an attacker sending bad tokens grows the audit by at most
// REFUSAL_BOUND.perKey events per (organization, address, code) and perOrg per organization a
// minute, plus one event telling how many were suppressed. Then the trail's search filters.
// Runs on SQLite, and on PostgreSQL with SVC_TEST_POSTGRES_URL.
import { describe, expect, test } from "bun:test";
import { accountWithRole, signInSession } from "../auth/test-fixtures.ts";
import { PRESESSION_COOKIE } from "../console/csrf.ts";
import { browser } from "../console/test-browser.ts";
import { testControlPlane } from "../testing.ts";
import { REFUSAL_BOUND, RefusalCounter } from "./refusal-bound.ts";
import { refusalTrail } from "./refusals.ts";

const from = (ip: string) => ({ "x-forwarded-for": ip, "user-agent": "curl/8" });

async function world() {
  let clock = Date.now();
  // Each read of the clock moves it a little: events stay in order (ids are time-ordered).
  const cp = await testControlPlane({ now: () => ++clock, config: { trustForwardedFor: true } });
  const refusals = async () => (await cp.call("GET", cp.org("/audit-records?action=access.*&limit=500"))).json.records as Array<Record<string, any>>;
  return { cp, refusals, advance: (ms: number) => (clock += ms) };
}

describe("refusals", () => {
  test("a 401 and a 403 on admin routes are recorded once each, naming who tried and from where; another organization's path records nothing", async () => {
    const { cp, refusals } = await world();
    const member = await accountWithRole(cp, "member", "mo@example.com");
    expect((await cp.call("GET", cp.org("/policies"), { token: "svc_at_not-a-token", headers: from("203.0.113.5") })).status).toBe(401);
    expect(
      (await cp.call("POST", cp.org("/policies"), { token: member.token, body: { name: "x", src: "*", dst: "model:invoke", effect: "permit", workspace: "default" }, headers: from("203.0.113.6") }))
        .status,
    ).toBe(403);
    expect((await cp.call("GET", "/api/v1/organizations/org_01NOSUCHORGANIZATION000000/policies", { token: "svc_at_bad", headers: from("203.0.113.5") })).status).toBe(401);
    const got = await refusals();
    expect(got.map((e) => [e.admin.status, e.admin.code, e.actor_id, e.admin.actor.ip, e.admin.actor.user_agent, e.target, e.admin.result, e.admin.severity])).toEqual([
      [403, "forbidden", member.accountId, "203.0.113.6", "curl/8", `route:POST /api/v1/organizations/${cp.orgId}/policies`, "refused", "high"],
      [401, "unauthorized", "anonymous", "203.0.113.5", "curl/8", `route:GET /api/v1/organizations/${cp.orgId}/policies`, "refused", "high"],
    ]);
    expect(got[0]!.admin.actor).toMatchObject({ email: "mo@example.com", role: "member", credential: { kind: "api_token" } });
    // the token tried is in no event (only its id, for a known one)
    expect(JSON.stringify(got)).not.toContain("svc_at_not-a-token");
  });

  test("a session write without its CSRF token, and a console page refused to a member, are one refusal each", async () => {
    const { cp, refusals } = await world();
    const s = await signInSession(cp);
    expect((await cp.call("POST", cp.org("/workspaces"), { token: null, body: { name: "x" }, headers: { cookie: s.cookie, ...from("192.0.2.44") } })).status).toBe(403);
    const member = await accountWithRole(cp, "member", "mo@example.com");
    const b = browser(cp);
    await b.send("/sign-in", { headers: from("192.0.2.45") });
    await b.post("/sign-in", { email: member.email, password: "correct horse battery staple", _csrf: b.jar.get(PRESESSION_COOKIE)! });
    expect((await b.send("/members", { headers: from("192.0.2.45") })).status).toBe(403);
    const got = await refusals();
    expect(got.map((e) => [e.target, e.actor_id, e.admin.actor.ip, e.admin.code])).toEqual([
      ["route:GET /members", member.accountId, "192.0.2.45", "forbidden"],
      [`route:POST /api/v1/organizations/${cp.orgId}/workspaces`, cp.accountId, "192.0.2.44", "forbidden"],
    ]);
  });

  test("the bound: at most perKey per (organization, address, code) a minute, then one event with the count suppressed", async () => {
    const { cp, refusals, advance } = await world();
    const bad = async (ip: string) => expect((await cp.call("GET", cp.org("/agents"), { token: "svc_at_guess", headers: from(ip) })).status).toBe(401);
    for (let i = 0; i < REFUSAL_BOUND.perKey + 7; i++) await bad("198.51.100.1");
    for (let i = 0; i < 2; i++) await bad("198.51.100.2");
    expect((await refusals()).map((e) => e.admin.actor.ip)).toEqual([...Array(2).fill("198.51.100.2"), ...Array(REFUSAL_BOUND.perKey).fill("198.51.100.1")]);
    advance(REFUSAL_BOUND.windowMs);
    await refusalTrail(cp.deps).flush();
    const [summary] = await refusals();
    expect(summary).toMatchObject({
      action: "access.refusals_suppressed",
      actor_id: "system:controlplane",
      admin: { result: "refused", severity: "high", after: { suppressed: 7, by: [{ ip: "198.51.100.1", code: "unauthorized", count: 7 }], other: 0 } },
    });
    // A new window: written again, up to the bound.
    await bad("198.51.100.1");
    expect((await refusals())[0]).toMatchObject({ action: "access.refused", admin: { actor: { ip: "198.51.100.1" } } });
    expect((await refusals()).length).toBe(REFUSAL_BOUND.perKey + 2 + 1 + 1);
  });

  test("the counter (pure): per organization whatever the addresses, held windows bounded, the largest suppressions listed", () => {
    const c = new RefusalCounter({ perKey: 2, perOrg: 3, windowMs: 1000, maxKeys: 4, maxListed: 2 });
    const admitted = Array.from({ length: 10 }, (_, i) => c.admit("org_A", `10.0.0.${i}`, "unauthorized", 0));
    expect(admitted.filter(Boolean).length).toBe(3);
    expect(c.size.keys).toBe(4);
    expect(c.admit("org_B", "10.0.0.1", "unauthorized", 10)).toBe(true);
    expect(c.due(999)).toEqual([]);
    const [a, ...rest] = c.due(1000);
    expect(rest).toEqual([]);
    expect(a).toMatchObject({ orgId: "org_A", suppressed: 7, windowStart: 0, windowEnd: 1000 });
    expect(a!.by.length + (a!.other > 0 ? 1 : 0)).toBeLessThanOrEqual(3);
    expect(a!.by.reduce((n, p) => n + p.count, 0) + a!.other).toBe(7);
    expect(c.size).toEqual({ keys: 0, orgs: 1 }); // org_B counted by its cap alone: no key window was free
  });
});

describe("searching the trail", () => {
  test("actor (email, id, system:…, anonymous), action (name or prefix*), result; an unknown action is a 422 naming it", async () => {
    const { cp } = await world();
    const bea = await accountWithRole(cp, "admin", "bea@example.com");
    await cp.call("POST", cp.org("/policies"), { token: bea.token, body: { name: "p", src: "*", dst: "model:invoke", effect: "permit", workspace: "default" } });
    await cp.call("POST", cp.org("/groups"), { body: { name: "staff" } });
    await cp.call("GET", cp.org("/agents"), { token: "svc_at_nope" });
    const q = async (qs: string) => ((await cp.call("GET", cp.org(`/audit-records?${qs}`))).json.records as Array<{ action: string }>).map((r) => r.action);
    expect(await q("actor=bea@example.com")).toEqual(["policy.create"]);
    expect(await q(`actor=${bea.accountId}&action=policy.*`)).toEqual(["policy.create"]);
    expect(await q("actor=system:bootstrap")).toEqual(["organization.bootstrap"]);
    expect(await q("actor=anonymous")).toEqual(["access.refused"]);
    expect(await q("action=group.create")).toEqual(["group.create"]);
    expect(await q("kind=admin&result=refused")).toEqual(["access.refused"]);
    expect(await q("actor=nobody@example.com")).toEqual([]);
    const bad = await cp.call("GET", cp.org("/audit-records?action=policy.explode"));
    expect([bad.status, bad.json.code, bad.json.detail]).toEqual([422, "validation_failed", expect.stringContaining('"policy.explode" is not an admin action')]);
    expect((await cp.call("GET", cp.org("/audit-records?action=nothing.*"))).status).toBe(422);
    // the export takes the same filters and carries the actor, target and the whole event
    const csv = (await cp.call("GET", cp.org("/audit-records/export?format=csv&action=policy.*"))).text.split("\r\n").filter(Boolean);
    const head = csv[0]!.split(",");
    expect(csv).toHaveLength(2);
    expect(csv[1]!.split(",")[head.indexOf("actor_id")]).toBe(bea.accountId);
  });
});
