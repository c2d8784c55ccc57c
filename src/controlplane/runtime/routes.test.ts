import { describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { newId } from "../../contract/ids.ts";
import { hashSecret, newSecret } from "../auth/tokens.ts";
import { tables } from "../db/index.ts";
import { currentDigestKey } from "../organizations/digest-keys.ts";
import { testControlPlane } from "../testing.ts";
import { addInstallation, bootstrapBody, newRecipient } from "./fixtures.ts";
import { replicasOf } from "../installations/replicas.ts";

const { recipient } = await newRecipient();

describe("runtime authentication", () => {
  test("a wrong token, an admin token, a rotated token and a deleted installation get 401", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    expect((await cp.call("GET", "/api/v1/runtime/audit-encryption-recipients", { token: inst.token })).status).toBe(200);

    const wrong = await cp.call("GET", "/api/v1/runtime/audit-encryption-recipients", { token: newSecret("runtime") });
    expect(wrong.status).toBe(401);
    expect(wrong.json.code).toBe("unauthorized");
    expect(wrong.headers.get("content-type")).toContain("application/problem+json");
    expect((await cp.call("GET", "/api/v1/runtime/audit-encryption-recipients", { token: cp.adminToken })).status).toBe(401);
    expect((await cp.call("GET", "/api/v1/runtime/audit-encryption-recipients", { token: null })).status).toBe(401);

    const rotated = newSecret("runtime");
    await cp.deps.db
      .update(tables(cp.deps.db).installations)
      .set({ tokenHash: hashSecret(rotated) })
      .where(eq(tables(cp.deps.db).installations.id, inst.installationId));
    expect((await cp.call("PUT", "/api/v1/runtime/tools", { token: inst.token, body: { tools: [] } })).status).toBe(401);
    expect((await cp.call("PUT", "/api/v1/runtime/tools", { token: rotated, body: { tools: [] } })).status).toBe(200);

    await cp.deps.db
      .update(tables(cp.deps.db).installations)
      .set({ deletedAt: cp.deps.now() })
      .where(eq(tables(cp.deps.db).installations.id, inst.installationId));
    expect((await cp.call("PUT", "/api/v1/runtime/tools", { token: rotated, body: { tools: [] } })).status).toBe(401);
  });

  test("a runtime token never reaches the admin API", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    expect((await cp.call("GET", cp.org("/audit-encryption-keys"), { token: inst.token })).status).toBe(401);
    expect((await cp.call("GET", cp.org("/audit-records"), { token: inst.token })).status).toBe(401);
  });

  test("an unknown runtime route is 404 problem+json (e.g. a base URL ending in /api/v1)", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const res = await cp.call("PUT", "/api/v1/api/v1/runtime/tools", { token: inst.token, body: { tools: [] } });
    expect(res.status).toBe(404);
    expect(res.json.code).toBe("not_found");
    expect((await cp.call("GET", "/api/v1/runtime/nothing-here", { token: inst.token })).status).toBe(404);
  });
});

describe("POST /runtime/bootstrap", () => {
  test("registers the replica and returns ids, the org digest key and intervals", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp, { name: "helpdesk" });
    const body = bootstrapBody(recipient);
    const res = await cp.call("POST", "/api/v1/runtime/bootstrap", { token: inst.token, body });
    expect(res.status).toBe(200);
    const digest = await currentDigestKey(cp.deps, cp.orgId);
    expect(res.json).toEqual({
      installation: { id: inst.installationId, name: "helpdesk", platform: "chatui" },
      organization_id: cp.orgId,
      workspace_id: inst.workspaceId,
      agent_id: inst.agentId,
      digest_key: { id: digest.id, key: Buffer.from(digest.key).toString("base64") },
      poll_interval_seconds: 60,
      heartbeat_interval_seconds: 60,
    });
    expect(Buffer.from(res.json.digest_key.key, "base64").length).toBe(32);
    const [rep] = await replicasOf(cp.deps.db, inst.installationId);
    expect(rep?.id).toBe(body.replica_id);
    expect(rep?.credentialSyncRecipient).toBe(recipient);
    expect(rep?.hostname).toBe("pod-1");

    // Bootstrapping again updates the same row (new version), no duplicate.
    const again = await cp.call("POST", "/api/v1/runtime/bootstrap", { token: inst.token, body: { ...body, version: "0.1.31" } });
    expect(again.status).toBe(200);
    expect((await replicasOf(cp.deps.db, inst.installationId)).map((r) => r.version)).toEqual(["0.1.31"]);
  });

  test("refuses a credential-sync key that is not an X25519 recipient, and a replica id of another installation", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const bad = await cp.call("POST", "/api/v1/runtime/bootstrap", { token: inst.token, body: bootstrapBody("age1notarecipientatall") });
    expect(bad.status).toBe(422);
    expect(bad.json.code).toBe("invalid_recipient");
    expect(await replicasOf(cp.deps.db, inst.installationId)).toEqual([]);

    const body = bootstrapBody(recipient);
    expect((await cp.call("POST", "/api/v1/runtime/bootstrap", { token: inst.token, body })).status).toBe(200);
    const other = await addInstallation(cp);
    const stolen = await cp.call("POST", "/api/v1/runtime/bootstrap", { token: other.token, body });
    expect(stolen.status).toBe(409);
    expect(await replicasOf(cp.deps.db, other.installationId)).toEqual([]);
    expect((await replicasOf(cp.deps.db, inst.installationId))[0]?.installationId).toBe(inst.installationId);
  });
});

describe("POST /runtime/heartbeat", () => {
  const beat = (replicaId: string, over: Record<string, unknown> = {}) => ({
    replica_id: replicaId,
    state: "ready",
    policy_revision: 7,
    tool_count: 3,
    version: "0.1.30",
    spool_depth: 0,
    last_success: "2025-01-01T00:00:00.000Z",
    ...over,
  });

  test("updates each replica's own row (two replicas, one token)", async () => {
    let now = 1_700_000_000_000;
    const cp = await testControlPlane({ now: () => now });
    const inst = await addInstallation(cp);
    const a = newId("replica");
    const b = newId("replica");
    for (const id of [a, b]) expect((await cp.call("POST", "/api/v1/runtime/bootstrap", { token: inst.token, body: bootstrapBody(recipient, id) })).status).toBe(200);

    now += 1000;
    const res = await cp.call("POST", "/api/v1/runtime/heartbeat", { token: inst.token, body: beat(a, { spool_depth: 12 }) });
    expect(res.status).toBe(204);
    now += 1000;
    expect((await cp.call("POST", "/api/v1/runtime/heartbeat", { token: inst.token, body: beat(b, { state: "stale", policy_revision: 5 }) })).status).toBe(204);

    const rows = new Map((await replicasOf(cp.deps.db, inst.installationId)).map((r) => [r.id, r]));
    expect(rows.get(a)).toMatchObject({ state: "ready", policyRevision: 7, toolCount: 3, spoolDepth: 12, lastSuccess: "2025-01-01T00:00:00.000Z", lastHeartbeatAt: 1_700_000_001_000 });
    expect(rows.get(b)).toMatchObject({ state: "stale", policyRevision: 5, spoolDepth: 0, lastHeartbeatAt: 1_700_000_002_000 });
  });

  test("measures the replica's clock skew from sent_at and keeps its spool's space and indexing; the installation status shows them", async () => {
    const now = 1_700_000_000_000;
    const cp = await testControlPlane({ now: () => now });
    const inst = await addInstallation(cp);
    const id = newId("replica");
    await cp.call("POST", "/api/v1/runtime/bootstrap", { token: inst.token, body: bootstrapBody(recipient, id) });
    const ahead = new Date(now + 20 * 60_000).toISOString(); // a runtime clock 20 minutes fast
    const res = await cp.call("POST", "/api/v1/runtime/heartbeat", {
      token: inst.token,
      body: beat(id, { sent_at: ahead, spool_state: "full", spool_free_bytes: 0, spool_depth: 40, spool_indexing: true }),
    });
    expect(res.status).toBe(204);
    const [row] = await replicasOf(cp.deps.db, inst.installationId);
    expect(row).toMatchObject({ clockSkewMs: 20 * 60_000, spoolState: "full", spoolFreeBytes: 0, spoolDepth: 40, spoolIndexing: true });
    const status = await cp.call("GET", cp.org(`/installations/${inst.installationId}`));
    expect(status.json.replicas[0]).toMatchObject({ clock_skew_ms: 20 * 60_000, spool_state: "full", spool_free_bytes: 0, spool_depth: 40, spool_indexing: true });
    // An older runtime sends neither: nothing is guessed.
    await cp.call("POST", "/api/v1/runtime/heartbeat", { token: inst.token, body: beat(id) });
    expect((await replicasOf(cp.deps.db, inst.installationId))[0]).toMatchObject({ clockSkewMs: null, spoolState: null, spoolIndexing: null });
  });

  test("an unknown replica (or another installation's) is told to bootstrap first", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const res = await cp.call("POST", "/api/v1/runtime/heartbeat", { token: inst.token, body: beat(newId("replica")) });
    expect(res.status).toBe(409);
    expect(res.json.detail).toContain("bootstrap first");

    const other = await addInstallation(cp);
    const id = newId("replica");
    await cp.call("POST", "/api/v1/runtime/bootstrap", { token: other.token, body: bootstrapBody(recipient, id) });
    expect((await cp.call("POST", "/api/v1/runtime/heartbeat", { token: inst.token, body: beat(id) })).status).toBe(409);
    expect((await replicasOf(cp.deps.db, other.installationId))[0]?.lastHeartbeatAt).toBeNull();
  });

  test("a malformed heartbeat is 422", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const res = await cp.call("POST", "/api/v1/runtime/heartbeat", { token: inst.token, body: beat(newId("replica"), { state: "sleepy" }) });
    expect(res.status).toBe(422);
    expect(res.json.code).toBe("validation_failed");
    // out of the store's range or size: refused, never a database error
    for (const bad of [{ spool_depth: 2 ** 40 }, { tool_count: -1 }, { policy_revision: 2 ** 31 }, { version: "v".repeat(101) }, { last_success: "x".repeat(65) }]) {
      const r = await cp.call("POST", "/api/v1/runtime/heartbeat", { token: inst.token, body: beat(newId("replica"), bad) });
      expect([Object.keys(bad)[0], r.status, r.json.code]).toEqual([Object.keys(bad)[0], 422, "validation_failed"]);
    }
    const wrongId = await cp.call("POST", "/api/v1/runtime/heartbeat", { token: inst.token, body: beat("replica-1") });
    expect(wrongId.status).toBe(422);
  });
});
