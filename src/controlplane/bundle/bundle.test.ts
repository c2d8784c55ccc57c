// The policy bundle over HTTP: content for v1 and v2, ETag / If-None-Match, revision changes.
import { describe, expect, test } from "bun:test";
import { newId } from "../../contract/ids.ts";
import { tables } from "../db/index.ts";
import { addGroupMember, ensureGroup, linkRemoteIdentity, noteRemoteIdentity, upsertUserByEmail } from "../directory/service.ts";
import { bumpRevision, getOrganization } from "../organizations/service.ts";
import { addInstallation, newRecipient } from "../runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";

async function addPolicy(cp: TestControlPlane, p: { name: string; src: string; dst: string; agentId: string | null; workspaceId?: string }) {
  const id = newId("policy");
  await cp.deps.db.transaction(async (tx) => {
    await tx.insert(tables(tx).policies).values({ id, orgId: cp.orgId, workspaceId: p.workspaceId ?? cp.workspaceId, agentId: p.agentId, name: p.name, src: p.src, dst: p.dst, effect: "permit" });
    await bumpRevision(tx, cp.orgId);
  });
  return id;
}

async function richSetup() {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp, { name: "helpdesk" });
  const otherAgentInst = await addInstallation(cp, { name: "sales" });
  await cp.call("PUT", "/api/v1/runtime/tools", {
    token: inst.token,
    body: {
      tools: [
        { name: "crm.lookup", access: "read", required_capabilities: ["crm"] },
        { name: "crm.update", access: "write" },
      ],
    },
  });
  await cp.call("PUT", "/api/v1/runtime/tools", { token: otherAgentInst.token, body: { tools: [{ name: "mail.send", access: "write" }] } });

  const bound = await addPolicy(cp, { name: "readers", src: "group:support", dst: "tool:crm.lookup", agentId: inst.agentId });
  const everyAgent = await addPolicy(cp, { name: "models", src: "*", dst: "model:invoke", agentId: null });
  await addPolicy(cp, { name: "not ours", src: "*", dst: "tool:mail.send", agentId: otherAgentInst.agentId });

  const { user } = await upsertUserByEmail(cp.deps.db, cp.orgId, { email: "ada@example.com", source: "manual" });
  const { group } = await ensureGroup(cp.deps.db, cp.orgId, "support", "manual");
  await addGroupMember(cp.deps.db, cp.orgId, group.id, user.id, "manual");
  await linkRemoteIdentity(cp.deps.db, cp.orgId, { remoteUserId: "fe-ada", userId: user.id, installationId: inst.installationId, now: cp.deps.now() });
  await noteRemoteIdentity(cp.deps.db, cp.orgId, { remoteUserId: "fe-unlinked", installationId: inst.installationId });

  const profileId = newId("modelProfile");
  await cp.deps.db.transaction(async (tx) => {
    const t = tables(tx);
    await tx.insert(t.modelProfiles).values({
      id: profileId,
      orgId: cp.orgId,
      workspaceId: cp.workspaceId,
      displayName: "GPT",
      endpoint: "https://llm.example.com/v1",
      authType: "none",
      defaultModel: "gpt-x",
      models: ["gpt-x", "gpt-y"],
    });
    await tx.insert(t.modelProfileAssignments).values({ agentId: inst.agentId, profileId, assignedAt: 1 });
    await bumpRevision(tx, cp.orgId);
  });

  const { recipient } = await newRecipient();
  const key = await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "sec team", public_key: recipient } });
  return { cp, inst, bound, everyAgent, user, profileId, key: key.json };
}

describe("GET /runtime/policy-bundle", () => {
  test("v1 carries the installation's tools, the agent's policies, identities with groups, the profile and recipients", async () => {
    const { cp, inst, bound, everyAgent, user, profileId, key } = await richSetup();
    const res = await cp.call("GET", "/api/v1/runtime/policy-bundle?version=1", { token: inst.token });
    expect(res.status).toBe(200);
    const b = res.json;
    const revision = (await getOrganization(cp.deps.db, cp.orgId)).revision;
    expect(res.headers.get("etag")).toMatch(new RegExp(`^W/"${revision}-v1-[0-9a-f]{16}"$`));
    expect(b).toMatchObject({ version: 1, revision, organization_id: cp.orgId, workspace_id: cp.workspaceId, installation_id: inst.installationId, agent_id: inst.agentId });
    expect(b.tools).toEqual([
      { name: "crm.lookup", access: "read", required_capabilities: ["crm"] },
      { name: "crm.update", access: "write", required_capabilities: [] },
    ]);
    expect(b.policies.map((p: { id: string }) => p.id).sort()).toEqual([bound, everyAgent].sort());
    expect(b.identities).toEqual([{ remote_user_id: "fe-ada", user_id: user.id, email: "ada@example.com", groups: ["support"], attributes: { source: "manual" } }]);
    expect(b.model_profile).toEqual({
      id: profileId,
      display_name: "GPT",
      endpoint: "https://llm.example.com/v1",
      auth_type: "none",
      default_model: "gpt-x",
      models: ["gpt-x", "gpt-y"],
      api_key_sealed: null,
    });
    expect(b.recipients).toEqual([{ key_id: key.id, recipient: key.public_key, kind: "customer" }]);
  });

  test("the model profile's prices reach the bundle (issue 16); a price for a model not offered is refused", async () => {
    const { cp, inst } = await richSetup();
    const before = (await cp.call("GET", "/api/v1/runtime/policy-bundle", { token: inst.token })).json;
    const profileId = before.model_profile.id;
    const set = await cp.call("PUT", cp.org(`/model-profiles/${profileId}/prices`), { body: { prices: { "gpt-x": { prompt: 2.5, completion: 10 } } } });
    expect(set.status).toBe(200);
    expect(set.json.prices).toEqual({ "gpt-x": { prompt: 2.5, completion: 10 } });
    const after = (await cp.call("GET", "/api/v1/runtime/policy-bundle", { token: inst.token })).json;
    expect(after.revision).toBeGreaterThan(before.revision);
    expect(after.model_profile.prices).toEqual({ "gpt-x": { prompt: 2.5, completion: 10 } });
    const bad = await cp.call("PUT", cp.org(`/model-profiles/${profileId}/prices`), { body: { prices: { "gpt-z": { prompt: 1, completion: 1 } } } });
    expect(bad.status).toBe(422);
    expect(bad.json.detail).toContain("gpt-z");
    await cp.call("PUT", cp.org(`/model-profiles/${profileId}/prices`), { body: { prices: {} } });
    expect((await cp.call("GET", "/api/v1/runtime/policy-bundle", { token: inst.token })).json.model_profile.prices).toBeUndefined();
  });

  test("v2 is the same data with version 2 and its own ETag; other versions are 422", async () => {
    const { cp, inst } = await richSetup();
    const v1 = await cp.call("GET", "/api/v1/runtime/policy-bundle", { token: inst.token });
    const v2 = await cp.call("GET", "/api/v1/runtime/policy-bundle?version=2", { token: inst.token });
    expect(v1.json.version).toBe(1);
    expect(v2.status).toBe(200);
    expect(v2.json.version).toBe(2);
    expect(v2.headers.get("etag")).toMatch(new RegExp(`^W/"${v1.json.revision}-v2-[0-9a-f]{16}"$`));
    const strip = ({ version: _v, generated_at: _g, ...rest }: Record<string, unknown>) => rest;
    expect(strip(v2.json)).toEqual(strip(v1.json));
    expect(v2.json.model_profile?.id).toBeString();

    const bad = await cp.call("GET", "/api/v1/runtime/policy-bundle?version=3", { token: inst.token });
    expect(bad.status).toBe(422);
    expect(bad.json.code).toBe("validation_failed");
  });

  test("If-None-Match with the current ETag is 304 with no body, until a policy insert bumps the revision", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const first = await cp.call("GET", "/api/v1/runtime/policy-bundle?version=1", { token: inst.token });
    const etag = first.headers.get("etag")!;
    expect(etag).toMatch(new RegExp(`^W/"${first.json.revision}-v1-[0-9a-f]{16}"$`));

    const again = await cp.call("GET", "/api/v1/runtime/policy-bundle?version=1", { token: inst.token, headers: { "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(again.text).toBe("");
    expect(again.headers.get("etag")).toBe(etag);
    // v2 with the v1 tag is not a match
    expect((await cp.call("GET", "/api/v1/runtime/policy-bundle?version=2", { token: inst.token, headers: { "if-none-match": etag } })).status).toBe(200);

    await addPolicy(cp, { name: "p", src: "*", dst: "model:invoke", agentId: inst.agentId });
    const changed = await cp.call("GET", "/api/v1/runtime/policy-bundle?version=1", { token: inst.token, headers: { "if-none-match": etag } });
    expect(changed.status).toBe(200);
    expect(changed.json.revision).toBeGreaterThan(first.json.revision);
    expect(changed.headers.get("etag")).not.toBe(etag);
    expect(changed.json.policies.map((p: { name: string }) => p.name)).toEqual(["p"]);
  });

  test("a bundle never shows another organization's identities or policies", async () => {
    const { cp } = await richSetup();
    const { addOrganization } = await import("../runtime/fixtures.ts");
    const other = await addOrganization(cp);
    const inst = await addInstallation(cp, { orgId: other.orgId, workspaceId: other.workspaceId });
    const b = (await cp.call("GET", "/api/v1/runtime/policy-bundle", { token: inst.token })).json;
    expect(b.organization_id).toBe(other.orgId);
    expect(b.identities).toEqual([]);
    expect(b.policies).toEqual([]);
    expect(b.recipients).toEqual([]);
    expect(b.model_profile).toBeNull();
  });

  test("conditions=1 (what the proxy asks) carries conditions and shadow policies, under its own ETag", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const post = async (body: Record<string, unknown>) =>
      cp.call("POST", cp.org("/policies"), { body: { src: "*", dst: "tool:crm.update", effect: "permit", workspace: "default", agent_id: inst.agentId, ...body } });
    await post({ name: "small credits", condition: "args.amount <= 500" });
    await post({ name: "watch big", effect: "deny", condition: "args.amount > 5000", mode: "shadow" });
    const withConditions = await cp.call("GET", "/api/v1/runtime/policy-bundle?version=2&conditions=1", { token: inst.token });
    expect(withConditions.headers.get("etag")).toMatch(new RegExp(`^W/"${withConditions.json.revision}-v2c-[0-9a-f]{16}"$`));
    expect(withConditions.json.policies.map((p: { name: string; condition?: string; mode?: string }) => [p.name, p.condition, p.mode])).toEqual([
      ["small credits", "args.amount <= 500", undefined],
      ["watch big", "args.amount > 5000", "shadow"],
    ]);
    // An older proxy (no conditions=1) gets neither: a conditional permit would widen access there.
    const old = await cp.call("GET", "/api/v1/runtime/policy-bundle?version=2", { token: inst.token });
    expect(old.json.policies).toEqual([]);
    const etag = withConditions.headers.get("etag")!;
    expect((await cp.call("GET", "/api/v1/runtime/policy-bundle?version=2&conditions=1", { token: inst.token, headers: { "if-none-match": etag } })).status).toBe(304);
    expect((await cp.call("GET", "/api/v1/runtime/policy-bundle?version=2", { token: inst.token, headers: { "if-none-match": etag } })).status).toBe(200);
  });
});
