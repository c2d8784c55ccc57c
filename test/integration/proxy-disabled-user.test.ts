// A disabled user (issue 27, "Disabled users") on the real stack: a control-plane process, the
// proxy as a child process. Their refusals are recorded under their service user (not the
// installation), with the code identity.disabled, found by `svc audit list --user`, and they
// are told they are disabled: no claim link, which could not help them.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { type ControlPlaneProcess, startControlPlane } from "../support/controlplane-process.ts";
import { addPolicy, adminApi, type Api, must, type ProxyProcess, proxyEnv, type Scenario, setUpScenario, startProxy, waitFor } from "../../src/proxy/testing/integration.ts";
import { svc } from "./cli-support.ts";

setDefaultTimeout(90_000);
let cp: ControlPlaneProcess;
let api: Api;
let s: Scenario;
let px: ProxyProcess;

const DISABLED = "Refused (identity.disabled): the service user this chat account is linked to is disabled; ask an administrator of svc to enable it";

beforeAll(async () => {
  cp = await startControlPlane();
  api = adminApi(cp);
  s = await setUpScenario(api, "disabled");
  await addPolicy(api, s, "*", "tool:crm.read");
  await addPolicy(api, s, "*", "model:invoke");
  const mp = await must(
    api("POST", "/model-profiles", { display_name: "LLM", endpoint: "https://127.0.0.1:9/v1", auth_type: "none", default_model: "m", workspace: s.workspace }),
    "create model profile",
  );
  await must(api("POST", `/model-profiles/${mp.id}/assign`, { agent_id: s.agentId }), "assign model profile");
  px = startProxy(proxyEnv(cp.url, s.runtimeToken, {}));
  await px.waitReady();
});

afterAll(async () => {
  await px?.stop();
  await cp?.stop();
});

describe("a disabled user", () => {
  test("is refused as disabled, recorded under their service user, found by svc audit list --user; enabled again, permitted", async () => {
    const alice = s.users.alice!;
    const revision = (await px.policy()).policy_revision;
    await must(api("POST", `/users/${alice.id}/disable`), "disable alice");
    await waitFor(async () => (await px.policy()).policy_revision > revision, "the proxy to take the new bundle");

    const tool = await px.decide("crm.read", alice.remote);
    expect(tool).toEqual({ decision: "deny", record_id: expect.stringMatching(/^rec_/), code: "identity.disabled", message: DISABLED });
    const chat = await px.call("/v1/chat/completions", { user: alice.remote, body: { messages: [{ role: "user", content: "hi" }] } });
    expect(chat.status).toBe(403);
    const e = (await chat.json()).error;
    expect(e).toEqual({ message: DISABLED, type: "refusal", code: "identity.disabled", record_id: expect.stringMatching(/^rec_/) });

    for (const id of [tool.record_id, e.record_id]) {
      let rec: any = null;
      await waitFor(async () => (rec = await api("GET", `/audit-records/${id}`)).status === 200, "the refusal's audit record");
      expect(rec.json).toMatchObject({ decision: "deny", reason: "identity.disabled", policy_id: null });
      expect(rec.json.subject).toMatchObject({ user_id: alice.id, remote_user_id: alice.remote, via_installation: false });
    }
    const listed = await svc(cp, ["audit", "list", "--user", alice.email, "--decision", "deny", "--json"]);
    expect(listed.code).toBe(0);
    expect(
      JSON.parse(listed.stdout)
        .records.map((r: { id: string }) => r.id)
        .sort(),
    ).toEqual([tool.record_id, e.record_id].sort());
    const table = await svc(cp, ["audit", "list", "--user", alice.email]);
    expect(table.stdout).toContain("identity.disabled");
    expect(table.stdout).not.toContain("(installation)");

    // bob, linked and enabled, is not affected; alice enabled again is permitted
    expect((await px.decide("crm.read", s.users.bob!.remote)).decision).toBe("permit");
    const before = (await px.policy()).policy_revision;
    await must(api("POST", `/users/${alice.id}/enable`), "enable alice");
    await waitFor(async () => (await px.policy()).policy_revision > before, "the proxy to take the new bundle");
    expect((await px.decide("crm.read", alice.remote)).decision).toBe("permit");
  });
});
