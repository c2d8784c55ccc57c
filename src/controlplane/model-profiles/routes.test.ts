import { describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { agentAndInstallation, fakeReplica, revisionOf, sealKey } from "../auth/test-fixtures.ts";
import { bootstrapBody, newRecipient } from "../runtime/fixtures.ts";
import { tables } from "../db/index.ts";
import { testControlPlane } from "../testing.ts";

const base = { display_name: "gateway", endpoint: "https://llm.example.com/v1/", auth_type: "none", default_model: "gpt-x", workspace: "default" };

describe("POST /model-profiles", () => {
  test("creates a profile; models default to the default model; the endpoint is normalized", async () => {
    const cp = await testControlPlane();
    const before = await revisionOf(cp);
    const res = await cp.call("POST", cp.org("/model-profiles"), { body: base });
    expect(res.status).toBe(201);
    expect(res.json).toEqual({
      id: expect.stringMatching(/^mp_/),
      display_name: "gateway",
      endpoint: "https://llm.example.com/v1",
      auth_type: "none",
      default_model: "gpt-x",
      models: ["gpt-x"],
      workspace_id: cp.workspaceId,
      has_api_key: false,
      sealed_to: [],
      prices: {},
      created_at: expect.any(String),
    });
    expect(await revisionOf(cp)).toBeGreaterThan(before);
    expect((await cp.call("GET", cp.org("/model-profiles?workspace=default"))).json.model_profiles.map((p: { id: string }) => p.id)).toEqual([res.json.id]);
    expect((await cp.call("GET", cp.org("/model-profiles/gateway?workspace=default"))).json.id).toBe(res.json.id);
    expect((await cp.call("GET", cp.org(`/model-profiles/${res.json.id}`))).json.display_name).toBe("gateway");
    expect((await cp.call("GET", cp.org("/model-profiles/nope"))).status).toBe(404);
    expect((await cp.call("POST", cp.org("/model-profiles"), { body: base })).status).toBe(409);
  });

  test.each([
    ["http://llm.example.com/v1", "endpoint_not_https", "https"],
    ["https://user:pw@llm.example.com/v1", "endpoint_has_credentials", "credentials"],
    ["https://llm.example.com/v1?api-version=1", "endpoint_has_query", "query"],
    ["https://llm.example.com/v1#x", "endpoint_has_fragment", "fragment"],
    ["llm.example.com", "invalid_endpoint", "not a URL"],
  ])("endpoint %p → 422 %p", async (endpoint, code, words) => {
    const cp = await testControlPlane();
    const res = await cp.call("POST", cp.org("/model-profiles"), { body: { ...base, endpoint } });
    expect(res.status).toBe(422);
    expect(res.json.code).toBe(code);
    expect(res.json.detail).toContain(words);
    expect(res.text).not.toContain(":pw@");
  });

  test("models must include the default model; auth_type must be none or api_key", async () => {
    const cp = await testControlPlane();
    const res = await cp.call("POST", cp.org("/model-profiles"), { body: { ...base, models: ["a", "b"] } });
    expect(res.status).toBe(422);
    expect(res.json.detail).toContain('include the default model "gpt-x"');
    const ok = await cp.call("POST", cp.org("/model-profiles"), { body: { ...base, models: ["a", "gpt-x", "a"] } });
    expect(ok.json.models).toEqual(["a", "gpt-x"]);
    expect((await cp.call("POST", cp.org("/model-profiles"), { body: { ...base, display_name: "o", auth_type: "oauth" } })).json.code).toBe("validation_failed");
  });

  test("api_key auth: a plaintext api_key is refused; a sealed key is required, to known runtimes", async () => {
    const cp = await testControlPlane();
    const plaintext = await cp.call("POST", cp.org("/model-profiles"), { body: { ...base, auth_type: "api_key", api_key: "sk-live-123" } });
    expect(plaintext.status).toBe(422);
    expect(plaintext.json.detail).toContain("never receives a plaintext API key");
    expect(plaintext.json.errors[0].path).toBe("/api_key");
    expect(plaintext.text).not.toContain("sk-live-123");

    const noKey = await cp.call("POST", cp.org("/model-profiles"), { body: { ...base, auth_type: "api_key" } });
    expect(noKey.status).toBe(422);
    expect(noKey.json.detail).toContain("api_key_sealed");

    const { installationId } = await agentAndInstallation(cp);
    const replica = await fakeReplica(cp, installationId);
    const sealed = await sealKey([replica.recipient]);
    const notAge = await cp.call("POST", cp.org("/model-profiles"), {
      body: { ...base, auth_type: "api_key", api_key_sealed: Buffer.from("sk-live-123").toString("base64"), sealed_to: [replica.id] },
    });
    expect(notAge.status).toBe(422);
    expect(notAge.json.detail).toContain("not an age file");
    const unknownReplica = await cp.call("POST", cp.org("/model-profiles"), { body: { ...base, auth_type: "api_key", api_key_sealed: sealed, sealed_to: [replica.id, "rep_ghost"] } });
    expect(unknownReplica.status).toBe(422);
    expect(unknownReplica.json.detail).toContain("rep_ghost");
    const emptyTo = await cp.call("POST", cp.org("/model-profiles"), { body: { ...base, auth_type: "api_key", api_key_sealed: sealed } });
    expect(emptyTo.status).toBe(422);
    const noneWithKey = await cp.call("POST", cp.org("/model-profiles"), { body: { ...base, api_key_sealed: sealed, sealed_to: [replica.id] } });
    expect(noneWithKey.status).toBe(422);

    const ok = await cp.call("POST", cp.org("/model-profiles"), { body: { ...base, auth_type: "api_key", api_key_sealed: sealed, sealed_to: [replica.id] } });
    expect(ok.status).toBe(201);
    expect(structuredClone(ok.json)).toMatchObject({ has_api_key: true, sealed_to: [replica.id] });
    expect(ok.text).not.toContain(sealed);
    const mp = tables(cp.deps.db).modelProfiles;
    const [row] = await cp.deps.db.select().from(mp).where(eq(mp.id, ok.json.id));
    expect(row).toBeDefined();
    expect(row!.apiKeySealed).toBe(sealed);
  });

  test("api_key auth with no runtime able to receive the key → 409 no_runtime_recipient", async () => {
    const cp = await testControlPlane();
    await agentAndInstallation(cp); // an installation, but no replica has bootstrapped
    const sealed = await sealKey(["age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"]);
    const res = await cp.call("POST", cp.org("/model-profiles"), { body: { ...base, auth_type: "api_key", api_key_sealed: sealed, sealed_to: ["rep_x"] } });
    expect(res.status).toBe(409);
    expect(res.json.code).toBe("no_runtime_recipient");
  });
});

describe("runtime recipients", () => {
  test("lists the credential-sync keys of the scope's replicas", async () => {
    const cp = await testControlPlane();
    const a = await agentAndInstallation(cp);
    const b = await agentAndInstallation(cp);
    const ra = await fakeReplica(cp, a.installationId);
    const rb = await fakeReplica(cp, b.installationId);
    const all = await cp.call("GET", cp.org("/runtime-recipients?workspace=default"));
    expect(all.json.recipients).toEqual(
      [ra, rb].map((r, i) => ({ replica_id: r.id, installation_id: [a, b][i]!.installationId, recipient: r.recipient })).sort((x, y) => x.replica_id.localeCompare(y.replica_id)),
    );
    const one = await cp.call("GET", cp.org(`/runtime-recipients?workspace=default&agent_id=${a.agentId}`));
    expect(one.json.recipients).toEqual([{ replica_id: ra.id, installation_id: a.installationId, recipient: ra.recipient }]);
    expect((await cp.call("GET", cp.org("/runtime-recipients"))).status).toBe(422);
    expect((await cp.call("GET", cp.org("/runtime-recipients?workspace=default&agent_id=agt_nope"))).json.code).toBe("agent_not_found");
  });
});

describe("assignment and readiness", () => {
  test("assign to an agent of the same workspace; look the assignment up; revision bumps", async () => {
    const cp = await testControlPlane();
    const { agentId } = await agentAndInstallation(cp);
    const profile = (await cp.call("POST", cp.org("/model-profiles"), { body: base })).json;
    const none = await cp.call("GET", cp.org(`/model-profile-assignments?workspace=default&agent_id=${agentId}`));
    expect(none.json).toEqual({ agent_id: agentId, profile: null });
    const before = await revisionOf(cp);
    const assigned = await cp.call("POST", cp.org(`/model-profiles/gateway/assign?workspace=default`), { body: { agent_id: agentId } });
    expect(assigned.status).toBe(200);
    expect(assigned.json).toEqual({ agent_id: agentId, profile_id: profile.id });
    expect(await revisionOf(cp)).toBeGreaterThan(before);
    const found = await cp.call("GET", cp.org(`/model-profile-assignments?agent_id=${agentId}`));
    expect(found.json.profile.id).toBe(profile.id);

    await cp.call("POST", cp.org("/workspaces"), { body: { name: "other" } });
    const foreign = (await cp.call("POST", cp.org("/agents"), { body: { name: "elsewhere", workspace: "other" } })).json;
    const wrongWs = await cp.call("POST", cp.org(`/model-profiles/${profile.id}/assign`), { body: { agent_id: foreign.id } });
    expect(wrongWs.status).toBe(422);
    expect((await cp.call("POST", cp.org(`/model-profiles/${profile.id}/assign`), { body: { agent_id: "agt_nope" } })).json.code).toBe("agent_not_found");
    expect((await cp.call("GET", cp.org(`/model-profile-assignments?workspace=default&agent_id=${foreign.id}`))).status).toBe(422);
  });

  test("readiness reports each check and follows replicas, sealing and assignment", async () => {
    const cp = await testControlPlane();
    const { agentId, installationId } = await agentAndInstallation(cp);
    const r1 = await fakeReplica(cp, installationId);
    const profile = (
      await cp.call("POST", cp.org("/model-profiles"), {
        body: { ...base, auth_type: "api_key", models: ["gpt-x", "gpt-y"], api_key_sealed: await sealKey([r1.recipient]), sealed_to: [r1.id] },
      })
    ).json;
    const readiness = async () => (await cp.call("GET", cp.org(`/model-profiles/${profile.id}/readiness`))).json;
    const check = (r: { checks: { name: string; ok: boolean; detail: string }[] }, name: string) => r.checks.find((c) => c.name === name)!;

    let r = await readiness();
    expect(r.checks.map((c: { name: string }) => c.name)).toEqual([
      "endpoint_valid",
      "default_model_listed",
      "api_key_present",
      "key_sealed_to_runtimes",
      "assigned_to_agent",
      "runtime_in_scope",
      "endpoint_reached",
    ]);
    expect(r.ready).toBe(false);
    expect(structuredClone(check(r, "assigned_to_agent"))).toMatchObject({ ok: false });
    expect(check(r, "endpoint_valid").ok).toBe(true);
    expect(check(r, "api_key_present").ok).toBe(true);
    expect(check(r, "key_sealed_to_runtimes").ok).toBe(true);
    expect(check(r, "runtime_in_scope").ok).toBe(true);

    await cp.call("POST", cp.org(`/model-profiles/${profile.id}/assign`), { body: { agent_id: agentId } });
    r = await readiness();
    expect(r.ready).toBe(true);
    expect(check(r, "assigned_to_agent").detail).toContain(agentId);

    // A new replica in scope that the key is not sealed to: named as missing.
    const r2 = await fakeReplica(cp, installationId);
    r = await readiness();
    expect(r.ready).toBe(false);
    const sealing = check(r, "key_sealed_to_runtimes");
    expect(sealing.ok).toBe(false);
    expect(sealing.detail).toContain(r2.id);
    expect(sealing.detail).not.toContain(r1.id);

    // Re-seal to both: ready again, and the bundle revision moved.
    const before = await revisionOf(cp);
    const resealed = await cp.call("PUT", cp.org(`/model-profiles/${profile.id}/api-key`), { body: { api_key_sealed: await sealKey([r1.recipient, r2.recipient]), sealed_to: [r2.id, r1.id] } });
    expect(resealed.status).toBe(200);
    expect(resealed.json.sealed_to).toEqual([r1.id, r2.id].sort());
    expect(await revisionOf(cp)).toBeGreaterThan(before);
    expect((await readiness()).ready).toBe(true);
    expect((await cp.call("PUT", cp.org(`/model-profiles/${profile.id}/api-key`), { body: { api_key: "sk-plain", api_key_sealed: "x", sealed_to: [] } })).json.errors[0].path).toBe("/api_key");
  });

  test("readiness compares the key's recipients with the replicas' current keys: a replica that bootstrapped again with a new key is not sealed to", async () => {
    const cp = await testControlPlane();
    const { agentId, installationId } = await agentAndInstallation(cp);
    const token = (await cp.call("POST", cp.org(`/installations/${installationId}/credential`), { body: {} })).json.token as string;
    const first = await newRecipient();
    const boot = bootstrapBody(first.recipient);
    expect((await cp.call("POST", "/api/v1/runtime/bootstrap", { token, body: boot })).status).toBe(200);
    const profile = (await cp.call("POST", cp.org("/model-profiles"), { body: { ...base, auth_type: "api_key", api_key_sealed: await sealKey([first.recipient]), sealed_to: [boot.replica_id] } }))
      .json;
    await cp.call("POST", cp.org(`/model-profiles/${profile.id}/assign`), { body: { agent_id: agentId } });
    const readiness = async () => (await cp.call("GET", cp.org(`/model-profiles/${profile.id}/readiness`))).json;
    expect((await readiness()).ready).toBe(true);

    // Same replica id (its state directory kept), new credential-sync key: it cannot open the key.
    const second = await newRecipient();
    expect((await cp.call("POST", "/api/v1/runtime/bootstrap", { token, body: { ...boot, credential_sync_recipient: second.recipient } })).status).toBe(200);
    const r = await readiness();
    expect(r.ready).toBe(false);
    const sealing = r.checks.find((c: { name: string }) => c.name === "key_sealed_to_runtimes");
    expect(sealing.ok).toBe(false);
    expect(sealing.detail).toContain(boot.replica_id);

    // Re-sealed to the new key: ready again.
    await cp.call("PUT", cp.org(`/model-profiles/${profile.id}/api-key`), { body: { api_key_sealed: await sealKey([second.recipient]), sealed_to: [boot.replica_id] } });
    expect((await readiness()).ready).toBe(true);

    // Issue 19: the runtime's heartbeat says its last attempt to reach the endpoint failed (TLS):
    // not ready, with the error; once a call reaches it, ready again.
    const beat = async (state: "ok" | "unreachable", error: string | null) =>
      cp.call("POST", "/api/v1/runtime/heartbeat", {
        token,
        body: {
          replica_id: boot.replica_id,
          state: "ready",
          policy_revision: 1,
          tool_count: 1,
          version: "t",
          spool_depth: 0,
          last_success: null,
          model_endpoints: [
            { profile_id: profile.id, state, error, at: "2026-11-25T17:00:00.000Z" },
            { profile_id: "mp_other", state: "ok", error: null, at: "2026-11-25T17:00:00.000Z" },
          ],
        },
      });
    expect((await beat("unreachable", "unable to verify the first certificate")).status).toBe(204);
    const tls = await readiness();
    expect(tls.ready).toBe(false);
    const reached = tls.checks.find((c: { name: string }) => c.name === "endpoint_reached");
    expect(reached).toMatchObject({ ok: false, detail: expect.stringContaining(`${boot.replica_id} at 2026-11-25T17:00:00.000Z: unable to verify the first certificate`) });
    expect((await beat("ok", null)).status).toBe(204);
    expect((await readiness()).ready).toBe(true);
  });

  test("replicas not heard from for a while are stale, then gone: shown so, not offered to seal to, not counted for readiness", async () => {
    let now = Date.now();
    const cp = await testControlPlane({ now: () => now });
    const { agentId, installationId } = await agentAndInstallation(cp);
    const old = await fakeReplica(cp, installationId);
    const profile = (await cp.call("POST", cp.org("/model-profiles"), { body: { ...base, auth_type: "api_key", api_key_sealed: await sealKey([old.recipient]), sealed_to: [old.id] } })).json;
    await cp.call("POST", cp.org(`/model-profiles/${profile.id}/assign`), { body: { agent_id: agentId } });
    const readiness = async () => (await cp.call("GET", cp.org(`/model-profiles/${profile.id}/readiness`))).json;
    const status = async () => (await cp.call("GET", cp.org(`/installations/${installationId}`))).json.replicas as Array<Record<string, unknown>>;
    const recipients = async () =>
      ((await cp.call("GET", cp.org(`/runtime-recipients?workspace=default&agent_id=${agentId}`))).json.recipients as Array<{ replica_id: string }>).map((r) => r.replica_id);
    expect((await status())[0]).toMatchObject({ id: old.id, state: "ready", liveness: "live" });

    // 16 minutes of silence: stale. A new replica replaced it.
    now += 16 * 60_000;
    const fresh = await fakeReplica(cp, installationId);
    const rows = Object.fromEntries((await status()).map((r) => [r.id, r]));
    expect(rows[old.id]).toMatchObject({ state: "stale", reported_state: "ready", liveness: "stale" });
    expect(rows[fresh.id]).toMatchObject({ state: "ready", liveness: "live" });
    expect(await recipients()).toEqual([fresh.id]);
    let r = await readiness();
    expect(r.ready).toBe(false); // the live replica is not sealed to; the stale one does not matter
    expect(r.checks.find((c: { name: string }) => c.name === "key_sealed_to_runtimes").detail).toContain(fresh.id);
    expect(r.checks.find((c: { name: string }) => c.name === "key_sealed_to_runtimes").detail).not.toContain(old.id);
    // Sealing to the stale replica is refused; to the live one it is ready.
    expect((await cp.call("PUT", cp.org(`/model-profiles/${profile.id}/api-key`), { body: { api_key_sealed: await sealKey([old.recipient]), sealed_to: [old.id] } })).status).toBe(422);
    await cp.call("PUT", cp.org(`/model-profiles/${profile.id}/api-key`), { body: { api_key_sealed: await sealKey([fresh.recipient]), sealed_to: [fresh.id] } });
    r = await readiness();
    expect(r.ready).toBe(true);
    expect(r.checks.find((c: { name: string }) => c.name === "runtime_in_scope").detail).toContain("1 stale or gone replica(s) not counted");

    // After a day of silence both are gone, and no runtime counts.
    now += 25 * 3600_000;
    expect(Object.fromEntries((await status()).map((r) => [r.id, r.liveness]))).toEqual({ [old.id]: "gone", [fresh.id]: "gone" });
    r = await readiness();
    expect(r.ready).toBe(false);
    expect(r.checks.find((c: { name: string }) => c.name === "runtime_in_scope").detail).toContain("heard from lately");
  });

  test("a profile with no runtimes and no assignment is not ready; auth none needs no key", async () => {
    const cp = await testControlPlane();
    const profile = (await cp.call("POST", cp.org("/model-profiles"), { body: base })).json;
    const r = (await cp.call("GET", cp.org(`/model-profiles/${profile.id}/readiness`))).json;
    expect(r.ready).toBe(false);
    const byName = Object.fromEntries(r.checks.map((c: { name: string; ok: boolean }) => [c.name, c.ok]));
    expect(byName).toEqual({
      endpoint_valid: true,
      default_model_listed: true,
      api_key_present: true,
      key_sealed_to_runtimes: true,
      assigned_to_agent: false,
      runtime_in_scope: false,
      endpoint_reached: true,
    });
    const setKey = await cp.call("PUT", cp.org(`/model-profiles/${profile.id}/api-key`), {
      body: { api_key_sealed: await sealKey(["age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"]), sealed_to: ["rep_x"] },
    });
    expect(setKey.status).toBe(422);
  });
});
