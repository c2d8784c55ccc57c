// The proxy daemon as a process against a real control-plane process: every refusal code,
// v1 and v2 model decisions, model forwarding, encryption to one and two recipients,
// digest-only records, and `svc policy show`.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Decrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { type ControlPlaneProcess, startControlPlane, svcCommand } from "../support/controlplane-process.ts";
import { startModelServer } from "../support/model-server.ts";
import { addPolicy, adminApi, type Api, must, type ProxyProcess, proxyEnv, type Scenario, setUpScenario, startProxy, waitFor } from "../../src/proxy/testing/integration.ts";

setDefaultTimeout(60_000);
let cp: ControlPlaneProcess;
let api: Api;
let s: Scenario;
let model: ReturnType<typeof startModelServer>;
let px: ProxyProcess;
let px2: ProxyProcess | null = null;

const record = async (id: string) => {
  let r: any = null;
  await waitFor(async () => (r = await api("GET", `/audit-records/${id}`)).status === 200, `audit record ${id} at the control plane`);
  return r.json;
};
const revisionNow = async () => (await px.policy()).policy_revision as number;
const waitRevisionAbove = async (rev: number) => waitFor(async () => (await px.policy()).policy_revision > rev, "the proxy to load a newer bundle");

beforeAll(async () => {
  cp = await startControlPlane();
  api = adminApi(cp);
  s = await setUpScenario(api);
  model = startModelServer();
  await addPolicy(api, s, `group:sales-helpdesk`, "tool:crm.read");
  await addPolicy(api, s, "*", "tool:crm.update");
  await addPolicy(api, s, `user:${s.users.bob!.id}`, "tool:crm.update", "deny");
  await addPolicy(api, s, `user:${s.users.alice!.id}`, "model:invoke");
  px = startProxy(proxyEnv(cp.url, s.runtimeToken, { SVC_PROXY_CA_FILE: model.caFile }));
  await px.waitReady();
});

afterAll(async () => {
  await px?.stop();
  await px2?.stop();
  await model?.stop();
  await cp?.stop();
});

describe("tool decisions against the real control plane", () => {
  test("permit by group; audited under the service user", async () => {
    const d = await px.decide("crm.read", s.users.alice!.remote);
    expect(d.decision).toBe("permit");
    const r = await record(d.record_id);
    expect(r).toMatchObject({ tool_name: "crm.read", decision: "permit", installation_id: s.installationId });
    expect(JSON.stringify(r)).toContain(s.users.alice!.id);
  });

  test("svc.denied: no permit, and deny overriding a * permit", async () => {
    const none = await px.decide("crm.read", s.users.bob!.remote);
    expect(none).toMatchObject({ decision: "deny", code: "svc.denied" });
    expect(none.message).toStartWith("Refused (svc.denied): ");
    const overridden = await px.decide("crm.update", s.users.bob!.remote);
    expect(overridden).toMatchObject({ decision: "deny", code: "svc.denied" });
    expect((await px.decide("crm.update", s.users.alice!.remote)).decision).toBe("permit");
    expect((await record(overridden.record_id)).decision).toBe("deny");
  });

  test("tool_not_registered, even with a permit for it", async () => {
    const rev = await revisionNow();
    await addPolicy(api, s, "*", "tool:mail.send");
    await waitRevisionAbove(rev);
    const d = await px.decide("mail.send", s.users.alice!.remote);
    expect(d).toMatchObject({ decision: "deny", code: "tool_not_registered" });
    expect(d.message).toBe("tool_not_registered");
  });

  test("identity.unlinked with a one-time claim link from the control plane, never logged", async () => {
    const d = await px.decide("crm.read", "fe-nobody");
    expect(d).toMatchObject({ decision: "deny", code: "identity.unlinked" });
    expect(d.message).toBe("Refused (identity.unlinked)");
    expect(d.claim_url).toStartWith(`${cp.url}/claim/`);
    expect(px.logs()).not.toContain(d.claim_url);
    const r = await record(d.record_id);
    expect(r.decision).toBe("deny");
  });

  test("no session user: the installation subject, marked via installation", async () => {
    const d = await px.decide("crm.update", null);
    expect(d.decision).toBe("permit"); // "*" permits crm.update
    const r = await record(d.record_id);
    expect(JSON.stringify(r)).toMatch(/"via_installation":true/);
  });

  test("a new permit reaches the proxy on its next poll", async () => {
    expect((await px.decide("crm.read", s.users.bob!.remote)).decision).toBe("deny");
    const rev = await revisionNow();
    await addPolicy(api, s, `user:${s.users.bob!.id}`, "tool:crm.read");
    await waitRevisionAbove(rev);
    expect((await px.decide("crm.read", s.users.bob!.remote)).decision).toBe("permit");
  });
});

describe("models", () => {
  test("no profile: empty list and refusal", async () => {
    const list = await (await px.call("/v1/models", { user: s.users.alice!.remote })).json();
    expect(list).toEqual({ object: "list", data: [] });
    const r = await px.call("/v1/chat/completions", { user: s.users.alice!.remote, body: { messages: [{ role: "user", content: "hi" }] } });
    expect(r.status).toBe(403);
  });

  test("v1: model:invoke permits decide; chat is forwarded to the profile endpoint", async () => {
    const rev = await revisionNow();
    const mp = await must(
      api("POST", "/model-profiles", { display_name: "Test LLM", endpoint: model.endpoint, auth_type: "none", default_model: "m-small", models: ["m-small", "m-large"], workspace: s.workspace }),
      "create model profile",
    );
    await must(api("POST", `/model-profiles/${mp.id}/assign`, { agent_id: s.agentId }), "assign model profile");
    await waitRevisionAbove(rev);
    // create and assign each move the revision: a poll between them loads a bundle without the profile
    await waitFor(async () => ((await (await px.call("/v1/models", { user: s.users.alice!.remote })).json()).data?.length ?? 0) > 0, "the proxy to load the assigned profile");
    const alice = await (await px.call("/v1/models", { user: s.users.alice!.remote })).json();
    expect(alice.data.map((m: any) => m.id)).toEqual(["m-small", "m-large"]);
    const bob = await (await px.call("/v1/models", { user: s.users.bob!.remote })).json();
    expect(bob.data).toEqual([]);
    const ok = await px.call("/v1/chat/completions", { user: s.users.alice!.remote, body: { model: "m-large", messages: [{ role: "user", content: "hi" }] } });
    expect(ok.status).toBe(200);
    expect((await ok.json()).choices[0].message.content).toBe("Hello from the model");
    expect(model.requests.at(-1)).toMatchObject({ path: "/v1/chat/completions", body: { model: "m-large" } });
    const denied = await px.call("/v1/chat/completions", { user: s.users.bob!.remote, body: { messages: [{ role: "user", content: "hi" }] } });
    expect(denied.status).toBe(403);
    const e = (await denied.json()).error;
    expect(e.code).toBe("svc.denied");
    expect(e.message).toStartWith("Refused (svc.denied)");
    const rec = await record(e.record_id);
    expect(rec).toMatchObject({ kind: "model", decision: "deny" });
  });

  test("v2: the profile assignment decides (bob sees and calls models without a permit)", async () => {
    // Started as svc run starts it: the CA file also in NODE_EXTRA_CA_CERTS, so the forwarded
    // call below trusts the model double through Bun's default store, with no per-call tls.ca.
    px2 = startProxy(proxyEnv(cp.url, s.runtimeToken, { SVC_PROXY_POLL_INTERVAL: undefined, SVC_PROXY_BUNDLE_VERSION: "2", SVC_PROXY_CA_FILE: model.caFile, NODE_EXTRA_CA_CERTS: model.caFile }));
    await px2.waitReady();
    expect((await px2.policy()).bundle_version).toBe(2);
    const bob = await (await px2.call("/v1/models", { user: s.users.bob!.remote })).json();
    expect(bob.data.map((m: any) => m.id)).toEqual(["m-small", "m-large"]);
    const r = await px2.call("/v1/chat/completions", { user: s.users.bob!.remote, body: { messages: [{ role: "user", content: "hi" }] } });
    expect(r.status).toBe(200);
    const un = await px2.call("/v1/chat/completions", { user: "fe-nobody", body: { messages: [] } });
    expect((await un.json()).error.code).toBe("identity.unlinked");
    await px2.stop();
    px2 = null;
  });
});

describe("audit encryption", () => {
  const decrypt = async (id: string, identity: string) => {
    const res = await fetch(`${cp.url}/api/v1/organizations/${cp.orgId}/audit-records/${id}/ciphertext`, { headers: { authorization: `Bearer ${cp.token}` } });
    expect(res.status).toBe(200);
    const d = new Decrypter();
    d.addIdentity(identity);
    return JSON.parse(await d.decrypt(new Uint8Array(await res.arrayBuffer()), "text"));
  };

  test("digest-only while no key is active", async () => {
    const d = await px.decide("crm.read", s.users.alice!.remote, { ticket: 1 });
    const r = await record(d.record_id);
    expect(r.args_digest).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
    expect(r.digest_key_id).toBeTruthy();
    expect(r.encryption).toEqual({ mode: "digest-only" });
    const ct = await api("GET", `/audit-records/${d.record_id}/ciphertext`);
    expect(ct.status).toBe(404);
  });

  test("one key, then two: each record decrypts with each identity it names", async () => {
    const a = await generateX25519Identity();
    const b = await generateX25519Identity();
    let rev = await revisionNow();
    const ka = await must(api("POST", "/audit-encryption-keys", { name: "key a", public_key: await identityToRecipient(a) }), "register key a");
    await waitRevisionAbove(rev);
    const one = await px.decide("crm.read", s.users.alice!.remote, { ticket: 7, note: "secret" });
    const r1 = await record(one.record_id);
    expect(r1.encryption).toEqual({ mode: "recipients", key_ids: [ka.id] });
    expect(await decrypt(one.record_id, a)).toEqual({ arguments: { note: "secret", ticket: 7 }, payload: null });

    rev = await revisionNow();
    const kb = await must(api("POST", "/audit-encryption-keys", { name: "key b", public_key: await identityToRecipient(b) }), "register key b");
    await waitRevisionAbove(rev);
    const two = await px.decide("crm.read", s.users.alice!.remote, { ticket: 8 });
    const r2 = await record(two.record_id);
    expect([...r2.encryption.key_ids].sort()).toEqual([ka.id, kb.id].sort());
    expect(await decrypt(two.record_id, a)).toEqual({ arguments: { ticket: 8 }, payload: null });
    expect(await decrypt(two.record_id, b)).toEqual({ arguments: { ticket: 8 }, payload: null });
    expect(r2.args_digest).not.toBe(r1.args_digest); // the digest is over the arguments, always kept
    expect(px.logs()).not.toContain("secret");

    // both keys disabled: back to digest-only
    rev = await revisionNow();
    await must(api("POST", `/audit-encryption-keys/${ka.id}:disable`), "disable a");
    await must(api("POST", `/audit-encryption-keys/${kb.id}:disable`), "disable b");
    await waitRevisionAbove(rev);
    await waitFor(async () => (await record((await px.decide("crm.read", s.users.alice!.remote)).record_id)).encryption.mode === "digest-only", "digest-only again");
  });
});

describe("svc policy show", () => {
  const show = (args: string[], env: Record<string, string>) => {
    const r = Bun.spawnSync([...svcCommand(), "policy", "show", ...args], { env: { ...process.env, ...env } as Record<string, string>, stdout: "pipe", stderr: "pipe" });
    return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() };
  };

  test("prints tool_count, state, policy_revision, last_success; --json for scripts", async () => {
    const env = { SVC_RUNTIME_TOKEN: s.runtimeToken, SVC_RUNTIME_SOCKET_PATH: px.socket };
    const text = show([], env);
    expect(text.code).toBe(0);
    const rev = (await px.policy()).policy_revision;
    expect(text.out).toMatch(/^tool_count:\s+2$/m);
    expect(text.out).toMatch(/^state:\s+ready$/m);
    expect(text.out).toMatch(/^policy_revision:\s+\d+$/m);
    expect(text.out).toMatch(/^last_success:\s+\d{4}-\d{2}-\d{2}T/m);
    const json = show(["--json"], env);
    expect(json.code).toBe(0);
    const j = JSON.parse(json.out);
    expect(j).toMatchObject({ tool_count: 2, state: "ready" });
    expect(j.policy_revision).toBeGreaterThanOrEqual(rev);
  });

  test("proxy not running: a clear error and exit 1", () => {
    const r = show([], { SVC_RUNTIME_TOKEN: s.runtimeToken, SVC_RUNTIME_SOCKET_PATH: "/tmp/svc-no-such-proxy.sock" });
    expect(r.code).toBe(1);
    expect(r.err).toContain("the proxy is not running");
  });
});
