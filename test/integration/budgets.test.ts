// A budget stopping a user at the limit across two proxy replicas of one installation, and a
// rate limit applied, on the real stack (issue 16). Budgets: the control plane counts the spend both replicas ship; each replica
// polls it (SVC_PROXY_LIMITS_INTERVAL) and adds its own calls at once. Overshoot bound: the
// calls permitted before the spend that crossed the limit reached a replica, at most one poll
// interval plus shipping; here, calls one at a time, it is the one call that crossed it.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type ControlPlaneProcess, startControlPlane } from "../support/controlplane-process.ts";
import { startModelServer } from "../support/model-server.ts";
import { addPolicy, adminApi, type Api, must, type ProxyProcess, proxyEnv, type Scenario, setUpScenario, startProxy, waitFor } from "../../src/proxy/testing/integration.ts";
import { svc } from "./cli-support.ts";

setDefaultTimeout(90_000);
let cp: ControlPlaneProcess;
let api: Api;
let s: Scenario;
let model: ReturnType<typeof startModelServer>;
const replicas: ProxyProcess[] = [];

const metric = async (px: ProxyProcess, series: string) => {
  const text = await (await px.call("/metrics")).text();
  return Number(
    text
      .split("\n")
      .find((l) => l.startsWith(`${series} `))
      ?.slice(series.length + 1) ?? NaN,
  );
};

beforeAll(async () => {
  cp = await startControlPlane();
  api = adminApi(cp);
  s = await setUpScenario(api, "budget");
  model = startModelServer();
  model.behaviour = { text: "fine", usage: { prompt_tokens: 20, completion_tokens: 10 } }; // 30 tokens a call
  await addPolicy(api, s, "*", "model:invoke");
  await addPolicy(api, s, "*", "tool:crm.read");
  const mp = await must(api("POST", "/model-profiles", { display_name: "LLM", endpoint: model.endpoint, auth_type: "none", default_model: "m-small", workspace: s.workspace }), "create model profile");
  await must(api("POST", `/model-profiles/${mp.id}/assign`, { agent_id: s.agentId }), "assign model profile");
  for (let i = 0; i < 2; i++) {
    const px = startProxy(proxyEnv(cp.url, s.runtimeToken, { SVC_PROXY_LIMITS_INTERVAL: "200ms", SVC_PROXY_CA_FILE: model.caFile, SVC_PROXY_RATE_LIMITS: "tool:crm.read=2/min" }));
    replicas.push(px);
  }
  await Promise.all(replicas.map(async (px) => px.waitReady()));
});

afterAll(async () => {
  for (const px of replicas) await px.stop();
  await model?.stop();
  await cp?.stop();
});

describe("budgets across two replicas", () => {
  test("alice is stopped at 100 tokens a day on both replicas; warned at 80 %; bob is not affected", async () => {
    const alice = s.users.alice!;
    const created = await svc(cp, ["budgets", "create", "--name", "alice-daily", "--user", alice.email, "--period", "day", "--tokens", "100"]);
    expect(created.code).toBe(0);
    expect(created.stdout).toContain("alice-daily");
    const series = 'svc_proxy_budget_spent{budget="alice-daily"}';
    // both replicas know the budget
    for (const px of replicas) await waitFor(async () => (await metric(px, series)) === 0, "the replica to fetch the budget");
    const chat = async (px: ProxyProcess, user: string) => px.call("/v1/chat/completions", { user, body: { model: "m-small", messages: [{ role: "user", content: "hi" }] } });
    const notices: (string | null)[] = [];
    // 30 tokens a call, alternating replicas; before each call both replicas have seen the
    // control plane's count of every earlier call (the bound: one call past the limit)
    let spent = 0;
    for (const [i, px] of [replicas[0]!, replicas[1]!, replicas[0]!, replicas[1]!].entries()) {
      const r = await chat(px, alice.remote);
      expect({ call: i, status: r.status }).toEqual({ call: i, status: 200 });
      notices.push(r.headers.get("x-svc-notice"));
      await r.text();
      spent += 30;
      for (const other of replicas) await waitFor(async () => (await metric(other, series)) === spent, `both replicas to count ${spent} tokens`);
    }
    // 90 tokens (≥ 80 %) before the fourth call: that call carried the warning, the earlier ones none
    expect(notices.slice(0, 3)).toEqual([null, null, null]);
    expect(decodeURIComponent(notices[3]!)).toStartWith('90 % of the budget "alice-daily" is used (90 tokens of 100 tokens this day)');
    // now 120 ≥ 100: refused on both replicas, audited with the reason, the model not called
    const calls = model.requests.length;
    for (const px of replicas) {
      const r = await chat(px, alice.remote);
      expect(r.status).toBe(403);
      const e = (await r.json()).error;
      expect(e.code).toBe("svc.budget_exceeded");
      expect(e.message).toStartWith('Refused (svc.budget_exceeded): the budget "alice-daily" is used up (120 tokens of 100 tokens this day); it resets at ');
      let rec: any = null;
      await waitFor(async () => (rec = await api("GET", `/audit-records/${e.record_id}`)).status === 200, "the refusal's audit record");
      expect(rec.json).toMatchObject({ kind: "model", decision: "deny", reason: expect.stringMatching(/^svc\.budget_exceeded: budget "alice-daily" \(bud_[0-9A-Z]{26}\)$/), policy_id: null });
    }
    expect(model.requests.length).toBe(calls);
    // another user is not affected
    const bob = await chat(replicas[1]!, s.users.bob!.remote);
    expect(bob.status).toBe(200);
    await bob.text();
    // overshoot: 20 % here, one call's worth; the listing shows it
    const listed = JSON.parse((await svc(cp, ["budgets", "list", "--json"])).stdout).budgets[0];
    expect(listed).toMatchObject({ name: "alice-daily", spent: 120, limit: 100, scope: "user", target: alice.email });
    // deleting the budget lets alice through again at the next poll
    expect((await svc(cp, ["budgets", "delete", "alice-daily"])).code).toBe(0);
    for (const px of replicas) await waitFor(async () => Number.isNaN(await metric(px, series)), "the replica to drop the budget");
    const again = await chat(replicas[0]!, alice.remote);
    expect(again.status).toBe(200);
    await again.text();
  });
});

describe("rate limits", () => {
  test("tool:crm.read=2/min: the third call within the minute is refused, audited, with the time to wait; buckets are per replica", async () => {
    const px = replicas[0]!;
    const bob = s.users.bob!.remote;
    expect((await px.decide("crm.read", bob)).decision).toBe("permit");
    expect((await px.decide("crm.read", bob)).decision).toBe("permit");
    const third = await px.decide("crm.read", bob);
    expect(third).toMatchObject({ decision: "deny", code: "svc.rate_limited" });
    expect(third.message).toMatch(/^Refused \(svc\.rate_limited\): tool crm\.read may make 2 requests a minute; try again in \d+ s$/);
    let rec: any = null;
    await waitFor(async () => (rec = await api("GET", `/audit-records/${third.record_id}`)).status === 200, "the refusal's audit record");
    expect(rec.json).toMatchObject({ tool_name: "crm.read", decision: "deny", reason: "svc.rate_limited: rate limit tool:crm.read=2/min", policy_id: null });
    // per replica: the other replica has its own bucket
    expect((await replicas[1]!.decide("crm.read", bob)).decision).toBe("permit");
  });
});
