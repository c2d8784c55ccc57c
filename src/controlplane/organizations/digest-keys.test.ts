// Digest-key rotation through the admin API (issue 27): a new current key, the old one kept and
// listed as retired, the runtimes told through the bundle and served the new material, one
// admin event of high severity naming both ids and never the material. On both stores.
import { describe, expect, test } from "bun:test";
import { addInstallation, addOrganization, bootstrapBody, newRecipient } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { digestKeyViews } from "./digest-keys.ts";

const { recipient } = await newRecipient();

describe("digest keys", () => {
  test("the views: the newest is current, each older one retired when the next was made (pure)", () => {
    expect(
      digestKeyViews([
        { id: "dk_1", createdAt: 1000 },
        { id: "dk_2", createdAt: 2000 },
      ]),
    ).toEqual([
      { id: "dk_1", status: "retired", created_at: new Date(1000).toISOString(), retired_at: new Date(2000).toISOString() },
      { id: "dk_2", status: "current", created_at: new Date(2000).toISOString(), retired_at: null },
    ]);
  });

  test("rotate: the new key is current for bootstrap, GET digest-key and the bundle; the old one stays listed; one admin event", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const listed = (await cp.call("GET", cp.org("/audit-digest-keys"))).json.keys;
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ status: "current", retired_at: null });
    const oldId = listed[0].id as string;
    const before = await cp.call("POST", "/api/v1/runtime/bootstrap", { token: inst.token, body: bootstrapBody(recipient) });
    const bundleBefore = await cp.call("GET", "/api/v1/runtime/policy-bundle?version=2", { token: inst.token });
    expect(bundleBefore.json.digest_key_id).toBe(oldId);
    const etag = bundleBefore.headers.get("etag")!;

    const rotated = await cp.call("POST", cp.org("/audit-digest-keys"));
    expect(rotated.status).toBe(201);
    const newId = rotated.json.key.id as string;
    expect(newId).not.toBe(oldId);
    expect(rotated.json).toMatchObject({ key: { id: newId, status: "current" }, retired: { id: oldId, status: "retired" } });
    expect(JSON.stringify(rotated.json)).not.toContain(before.json.digest_key.key);

    // the runtimes: the bundle changed (its ETag no longer matches) and names the new id
    const polled = await cp.call("GET", "/api/v1/runtime/policy-bundle?version=2", { token: inst.token, headers: { "if-none-match": etag } });
    expect(polled.status).toBe(200);
    expect(polled.json.digest_key_id).toBe(newId);
    const fetched = await cp.call("GET", "/api/v1/runtime/digest-key", { token: inst.token });
    expect(fetched.status).toBe(200);
    expect(fetched.json.id).toBe(newId);
    expect(Buffer.from(fetched.json.key, "base64")).toHaveLength(32);
    expect(fetched.json.key).not.toBe(before.json.digest_key.key);
    const again = await cp.call("POST", "/api/v1/runtime/bootstrap", { token: inst.token, body: bootstrapBody(recipient) });
    expect(again.json.digest_key).toEqual(fetched.json);

    // admins: both listed, never material; one shown by id
    const after = (await cp.call("GET", cp.org("/audit-digest-keys"))).json.keys;
    expect(after.map((k: { id: string; status: string }) => [k.id, k.status])).toEqual([
      [oldId, "retired"],
      [newId, "current"],
    ]);
    expect(after[0].retired_at).toBe(after[1].created_at);
    expect(Object.keys(after[0]).sort()).toEqual(["created_at", "id", "retired_at", "status"]);
    expect((await cp.call("GET", cp.org(`/audit-digest-keys/${oldId}`))).json).toEqual(after[0]);
    expect((await cp.call("GET", cp.org("/audit-digest-keys/dk_NOPE"))).status).toBe(404);

    // the admin trail: one event, high, both ids, no material
    const events = (await cp.call("GET", cp.org("/audit-records?kind=admin"))).json.records.filter((r: { action: string }) => r.action === "digest_key.rotate");
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      target: `digest_key:${newId}`,
      admin: { severity: "high", result: "ok", before: { current: oldId }, after: { current: newId }, actor: { email: "owner@example.com", credential: { kind: "api_token" } } },
    });
    const text = JSON.stringify(events[0]);
    for (const material of [before.json.digest_key.key, fetched.json.key]) expect(text).not.toContain(material);
  });

  test("a runtime token cannot rotate or list keys, and an admin token cannot fetch the material", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    expect((await cp.call("POST", cp.org("/audit-digest-keys"), { token: inst.token })).status).toBe(401);
    expect((await cp.call("GET", cp.org("/audit-digest-keys"), { token: inst.token })).status).toBe(401);
    expect((await cp.call("GET", "/api/v1/runtime/digest-key", { token: cp.adminToken })).status).toBe(401);
    expect((await cp.call("GET", cp.org("/audit-digest-keys"))).json.keys).toHaveLength(1);
  });

  test("a rotation is the organization's own: another organization's key and bundle do not change", async () => {
    const cp = await testControlPlane();
    const other = await addOrganization(cp);
    const otherKeys = (await cp.call("GET", other.org("/audit-digest-keys"), { token: other.adminToken })).json.keys;
    await cp.call("POST", cp.org("/audit-digest-keys"));
    expect((await cp.call("GET", other.org("/audit-digest-keys"), { token: other.adminToken })).json.keys).toEqual(otherKeys);
    expect((await cp.call("GET", cp.org("/audit-digest-keys"))).json.keys).toHaveLength(2);
  });
});
