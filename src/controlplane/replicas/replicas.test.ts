// A rolling control-plane upgrade (issue 29): while a replica that cannot express a policy
// feature is live, every replica serves the policy's narrower form (the same body, the same
// ETag, so a proxy never sees a policy widen and narrow again between polls); once it is gone,
// the whole policy comes back. On SQLite, and on PostgreSQL with SVC_TEST_POSTGRES_URL.
import { describe, expect, test } from "bun:test";
import { createApp } from "../app.ts";
import { tables } from "../db/index.ts";
import { addInstallation } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { POLICY_FEATURES, commonFeatures, policyNeeds } from "./features.ts";
import { LIVE_MS, beat, liveReplicas, refreshExpressible, selfReplica } from "./service.ts";

const BUNDLE = "/api/v1/runtime/policy-bundle?version=2&conditions=1";

describe("policy features (pure)", () => {
  test("a policy needs what its fields use and what a later release stored", () => {
    expect(policyNeeds({ condition: "args.a < 1", mode: "shadow" })).toEqual(["conditions", "shadow"]);
    expect(policyNeeds({ condition: null, mode: "enforce", requires: ["time_windows"] })).toEqual(["time_windows"]);
    expect(policyNeeds({})).toEqual([]);
  });

  test("the features every live replica knows", () => {
    expect([...commonFeatures(POLICY_FEATURES, [])]).toEqual(["conditions", "shadow"]);
    expect([...commonFeatures(POLICY_FEATURES, [["conditions"], ["conditions", "shadow", "time_windows"]])]).toEqual(["conditions"]);
  });
});

describe("a mixed window of control-plane releases", () => {
  test("both releases serve the narrower bundle while the older one is live; the whole one after it left", async () => {
    let clock = Date.now();
    const cp = await testControlPlane({ now: () => clock });
    cp.deps.replica = selfReplica("0020_version_skew");
    await beat(cp.deps.db, cp.deps.replica, clock);
    const inst = await addInstallation(cp);
    for (const [name, extra] of [
      ["conditional", { condition: "args.amount <= 500" }],
      ["shadowed", { mode: "shadow" }],
    ] as const) {
      const res = await cp.call("POST", cp.org("/policies"), {
        body: { name, src: "*", dst: "tool:crm.credit", effect: name === "shadowed" ? "deny" : "permit", workspace: cp.workspaceId, agent_id: inst.agentId, ...extra },
      });
      expect(res.status).toBe(201);
    }
    const poll = async (app: { handle(r: Request): Promise<Response> }, etag?: string) => {
      const res = await app.handle(new Request(`http://localhost${BUNDLE}`, { headers: { authorization: `Bearer ${inst.token}`, ...(etag ? { "if-none-match": etag } : {}) } }));
      return { status: res.status, etag: res.headers.get("etag")!, policies: res.status === 200 ? ((await res.json()) as { policies: { name: string }[] }).policies.map((p) => p.name).sort() : null };
    };
    await refreshExpressible(cp.deps);
    const whole = await poll(cp.app);
    expect(whole.policies).toEqual(["conditional", "shadowed"]);

    // An older replica starts: it knows conditions but not shadow mode (its own deps, same store).
    const old = { ...cp.deps, replica: selfReplica("0019_old", { version: "0.1.99+old", policyFeatures: ["conditions"] }) };
    await beat(cp.deps.db, old.replica, clock);
    const oldApp = createApp(old);
    await refreshExpressible(old);
    await refreshExpressible(cp.deps);
    expect((await liveReplicas(cp.deps.db, clock, cp.deps.replica.id)).map((r) => r.version).sort()).toEqual([cp.deps.replica.version, "0.1.99+old"].sort());
    // The new replica no longer answers the whole bundle's ETag with 304, and serves what the old one serves.
    const narrowNew = await poll(cp.app, whole.etag);
    const narrowOld = await poll(oldApp);
    expect(narrowNew.status).toBe(200);
    expect(narrowNew.policies).toEqual(["conditional"]);
    expect(narrowOld.policies).toEqual(["conditional"]);
    expect(narrowOld.etag).toBe(narrowNew.etag);
    expect((await poll(oldApp, narrowNew.etag)).status).toBe(304);

    // The old replica is gone (silent for longer than LIVE_MS): the whole bundle again.
    clock += LIVE_MS + 1000;
    await beat(cp.deps.db, cp.deps.replica, clock);
    await refreshExpressible(cp.deps);
    const back = await poll(cp.app, narrowNew.etag);
    expect(back.status).toBe(200);
    expect(back.policies).toEqual(["conditional", "shadowed"]);
    expect(back.etag).toBe(whole.etag);
  });

  test("a policy marked by a later release with a feature this one does not know is served narrower, and an update here keeps the mark", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const made = await cp.call("POST", cp.org("/policies"), { body: { name: "future", src: "*", dst: "tool:crm.credit", effect: "permit", workspace: cp.workspaceId, agent_id: inst.agentId } });
    const p = tables(cp.deps.db).policies;
    // what a later release wrote for a field of its own
    await cp.deps.db.update(p).set({ requires: ["time_windows"] });
    const names = async () => ((await cp.call("GET", BUNDLE, { token: inst.token })).json as { policies: { name: string }[] }).policies.map((x) => x.name);
    expect(await names()).toEqual([]);
    // renaming it here must not drop the mark (that would widen it for every replica)
    expect((await cp.call("PATCH", cp.org(`/policies/${made.json.id}`), { body: { name: "future-renamed" } })).status).toBe(200);
    const [row] = await cp.deps.db.select({ requires: p.requires }).from(p);
    expect(row!.requires).toEqual(["time_windows"]);
    expect(await names()).toEqual([]);
  });
});
