// Budgets by reservation (issue 28, "Budgets overshoot"), on the real stack: one proxy, the
// real control plane, the HTTPS model double reporting 150 tokens a call, a 3,000-token
// budget: 20 calls fit. Before, spend was marked when the poll was sent, so spend not yet
// ingested counted zero times and one proxy alone let 24 calls through (20 %). With leases the
// overshoot of one proxy is at most its calls in flight: none for calls one at a time, at most
// 8 calls' worth for 8 at once. The figures across replicas and control planes:
// `bun bench/budget-overshoot.ts` (docs/performance.md).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type ControlPlaneProcess, startControlPlane } from "../support/controlplane-process.ts";
import { startModelServer } from "../support/model-server.ts";
import { addPolicy, adminApi, type Api, must, type ProxyProcess, proxyEnv, type Scenario, setUpScenario, startProxy, waitFor } from "../../src/proxy/testing/integration.ts";

setDefaultTimeout(120_000);
const PER_CALL = 150;
const LIMIT = 3000;
let cp: ControlPlaneProcess;
let api: Api;
let s: Scenario;
let model: ReturnType<typeof startModelServer>;
let px: ProxyProcess;

beforeAll(async () => {
  cp = await startControlPlane();
  api = adminApi(cp);
  s = await setUpScenario(api, "overshoot");
  model = startModelServer();
  model.behaviour = { text: "fine", usage: { prompt_tokens: 100, completion_tokens: 50 } };
  await addPolicy(api, s, "*", "model:invoke");
  const mp = await must(api("POST", "/model-profiles", { display_name: "LLM", endpoint: model.endpoint, auth_type: "none", default_model: "m-small", workspace: s.workspace }), "create model profile");
  await must(api("POST", `/model-profiles/${mp.id}/assign`, { agent_id: s.agentId }), "assign model profile");
  for (const who of ["alice", "bob"])
    await must(api("POST", "/budgets", { name: `${who}-daily`, scope: "user", target: s.users[who]!.id, period: "day", unit: "tokens", limit: LIMIT }), `budget of ${who}`);
  px = startProxy(proxyEnv(cp.url, s.runtimeToken, { SVC_PROXY_LIMITS_INTERVAL: "200ms", SVC_PROXY_CA_FILE: model.caFile }));
  await px.waitReady();
  await waitFor(async () => (await (await px.call("/metrics")).text()).includes('svc_proxy_budget_limit{budget="bob-daily"}'), "the proxy to know the budgets");
});

afterAll(async () => {
  await px?.stop();
  await model?.stop();
  await cp?.stop();
});

/** Calls by `workers` callers at once on each proxy (one caller alternating between them when 1), each until refused; the permitted ones. */
async function spendDown(user: string, workers: number, on: ProxyProcess[] = [px]): Promise<number> {
  let permitted = 0;
  let turn = 0;
  const worker = async (at: ProxyProcess | null) => {
    for (let i = 0; i < 200; i++) {
      const r = await (at ?? on[turn++ % on.length]!).call("/v1/chat/completions", { user, body: { messages: [{ role: "user", content: "hi" }] } });
      await r.text();
      if (r.status !== 200) {
        expect(r.status).toBe(403);
        return;
      }
      permitted++;
    }
  };
  if (workers === 1) await worker(null);
  else await Promise.all(on.flatMap((p) => Array.from({ length: workers }, async () => worker(p))));
  return permitted;
}

const spentAtControlPlane = async (name: string) => {
  const listed = (await must(api("GET", "/budgets"), "list budgets")).budgets.find((b: { name: string }) => b.name === name);
  return listed.spent as number;
};

describe("budget overshoot on one proxy", () => {
  test("calls one at a time: 20 of 150 tokens fit 3,000, and 20 run (no overshoot; 24 before)", async () => {
    const permitted = await spendDown(s.users.alice!.remote, 1);
    expect(permitted).toBe(LIMIT / PER_CALL);
    await waitFor(async () => (await spentAtControlPlane("alice-daily")) === permitted * PER_CALL, "the spend to be ingested");
  });

  test("8 calls at once: the overshoot is at most the 8 calls in flight", async () => {
    const permitted = await spendDown(s.users.bob!.remote, 8);
    const overshoot = permitted * PER_CALL - LIMIT;
    expect(permitted * PER_CALL).toBeGreaterThanOrEqual(LIMIT - 8 * PER_CALL); // leases held back no more than the calls in flight
    expect(overshoot).toBeLessThanOrEqual(8 * PER_CALL);
    await waitFor(async () => (await spentAtControlPlane("bob-daily")) === permitted * PER_CALL, "the spend to be ingested");
  });
});

describe("budget overshoot across two replicas", () => {
  test("at the default 15 s poll, paced and in a burst: at most the calls in flight past the limit (85 % and 135 % before)", async () => {
    const users: { id: string; remote: string }[] = [];
    for (const who of ["carol", "dave"]) {
      const u = await must(api("POST", "/users", { email: `${who}.overshoot@example.com` }), `create ${who}`);
      await must(api("POST", `/users/${u.id}/remote-identities`, { platform: "chatui", remote_user_id: `fe-${who}-overshoot` }), `link ${who}`);
      await must(api("POST", "/budgets", { name: `${who}-daily`, scope: "user", target: u.id, period: "day", unit: "tokens", limit: LIMIT }), `budget of ${who}`);
      users.push({ id: u.id, remote: `fe-${who}-overshoot` });
    }
    const replicas: ProxyProcess[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        replicas.push(startProxy(proxyEnv(cp.url, s.runtimeToken, { SVC_PROXY_POLL_INTERVAL: undefined, SVC_PROXY_CA_FILE: model.caFile })));
      }
      for (const r of replicas) await r.waitReady();
      for (const r of replicas) await waitFor(async () => (await (await r.call("/metrics")).text()).includes('svc_proxy_budget_limit{budget="dave-daily"}'), "the replica to know the budgets");
      const paced = await spendDown(users[0]!.remote, 1, replicas);
      expect(paced * PER_CALL - LIMIT).toBeLessThanOrEqual(1 * PER_CALL);
      const burst = await spendDown(users[1]!.remote, 8, replicas);
      expect(burst * PER_CALL - LIMIT).toBeLessThanOrEqual(16 * PER_CALL);
      expect(burst * PER_CALL).toBeGreaterThanOrEqual(LIMIT - 16 * PER_CALL);
      await waitFor(async () => (await spentAtControlPlane("dave-daily")) === burst * PER_CALL, "the spend to be ingested");
    } finally {
      for (const r of replicas) await r.stop();
    }
  });
});
