// Rate limits applied on the real proxy (issue 16; docs/proxy.md "Rate limits"): a control-plane
// process, one proxy process with SVC_PROXY_RATE_LIMITS, the HTTPS model double. Each kind of
// bucket (per user, per model, per named tool) refuses with its own text, code and audit reason,
// a refusal takes no token, and a bucket refills after the wait it names. Buckets are per
// replica (budgets.test.ts shows a second replica has its own).
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type ControlPlaneProcess, startControlPlane } from "../support/controlplane-process.ts";
import { startModelServer } from "../support/model-server.ts";
import { addPolicy, adminApi, type Api, must, type ProxyProcess, proxyEnv, type Scenario, setUpScenario, startProxy, waitFor } from "../../src/proxy/testing/integration.ts";

setDefaultTimeout(120_000);
let cp: ControlPlaneProcess;
let api: Api;
let s: Scenario;
let model: ReturnType<typeof startModelServer>;
let px: ProxyProcess;

beforeAll(async () => {
  cp = await startControlPlane();
  api = adminApi(cp);
  s = await setUpScenario(api, "rates");
  model = startModelServer();
  model.behaviour = { text: "fine" };
  await addPolicy(api, s, "*", "model:invoke");
  await addPolicy(api, s, "*", "tool:crm.read");
  await addPolicy(api, s, "*", "tool:crm.update");
  const mp = await must(
    api("POST", "/model-profiles", { display_name: "LLM", endpoint: model.endpoint, auth_type: "none", default_model: "m-small", models: ["m-small", "m-large"], workspace: s.workspace }),
    "create model profile",
  );
  await must(api("POST", `/model-profiles/${mp.id}/assign`, { agent_id: s.agentId }), "assign model profile");
  px = startProxy(proxyEnv(cp.url, s.runtimeToken, { SVC_PROXY_CA_FILE: model.caFile, SVC_PROXY_RATE_LIMITS: "user=6/min,model=2/min,tool:crm.read=3/min" }));
  await px.waitReady();
});

afterAll(async () => {
  await px?.stop();
  await model?.stop();
  await cp?.stop();
});

const auditOf = async (id: string) => {
  let rec: any = null;
  await waitFor(async () => (rec = await api("GET", `/audit-records/${id}`)).status === 200, `the audit record ${id}`);
  return rec.json;
};

describe("rate limits on the real proxy", () => {
  test("per tool, per model and per user buckets refuse with svc.rate_limited, audited; a bucket refills after the wait it names", async () => {
    const alice = s.users.alice!.remote;
    const bob = s.users.bob!.remote;
    const chat = async (user: string, m: string) => px.call("/v1/chat/completions", { user, body: { model: m, messages: [{ role: "user", content: "hi" }] } });

    // per named tool: crm.read=3/min is one bucket for every caller
    for (let i = 0; i < 3; i++) expect((await px.decide("crm.read", bob)).decision).toBe("permit");
    const toolRefusal = await px.decide("crm.read", bob);
    expect(toolRefusal).toMatchObject({ decision: "deny", code: "svc.rate_limited" });
    expect(toolRefusal.message).toMatch(/^Refused \(svc\.rate_limited\): tool crm\.read may make 3 requests a minute; try again in \d+ s$/);
    expect(await auditOf(toolRefusal.record_id)).toMatchObject({ tool_name: "crm.read", decision: "deny", reason: "svc.rate_limited: rate limit tool:crm.read=3/min", policy_id: null });
    expect((await px.decide("crm.read", alice)).code).toBe("svc.rate_limited"); // the same bucket for alice
    const wait = Number(/try again in (\d+) s/.exec(toolRefusal.message)![1]);
    expect(wait).toBeGreaterThanOrEqual(1);
    expect(wait).toBeLessThanOrEqual(20); // 3 a minute: one token every 20 s

    // per model: each model 2/min; a 429 with Retry-After and the refusal body, the model not called
    for (let i = 0; i < 2; i++) {
      const r = await chat(alice, "m-small");
      expect(r.status).toBe(200);
      await r.text();
    }
    const calls = model.requests.length;
    const refused = await chat(alice, "m-small");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    const err = (await refused.json()).error;
    expect(err).toMatchObject({ type: "refusal", code: "svc.rate_limited" });
    expect(err.message).toMatch(/^Refused \(svc\.rate_limited\): each model may make 2 requests a minute; try again in \d+ s$/);
    expect(model.requests.length).toBe(calls);
    expect(await auditOf(err.record_id)).toMatchObject({ kind: "model", decision: "deny", reason: "svc.rate_limited: rate limit model=2/min", policy_id: null });
    const other = await chat(alice, "m-large"); // another model has its own bucket
    expect(other.status).toBe(200);
    await other.text();

    // per user: 6/min over model and tool calls together; refusals took no token (bob: 3 permitted so far)
    for (let i = 0; i < 3; i++) expect((await px.decide("crm.update", bob)).decision).toBe("permit");
    const userRefusal = await px.decide("crm.update", bob);
    expect(userRefusal).toMatchObject({ decision: "deny", code: "svc.rate_limited" });
    expect(userRefusal.message).toMatch(/^Refused \(svc\.rate_limited\): each user may make 6 requests a minute; try again in \d+ s$/);
    expect(await auditOf(userRefusal.record_id)).toMatchObject({ tool_name: "crm.update", decision: "deny", reason: "svc.rate_limited: rate limit user=6/min", policy_id: null });
    expect((await px.decide("crm.update", alice)).decision).toBe("permit"); // alice: 4 of 6

    // refill: after the wait the tool refusal named, crm.read takes a call again
    await Bun.sleep(wait * 1000);
    expect((await px.decide("crm.read", alice)).decision).toBe("permit");
  });
});
