// Audit-encryption keys, the runtime recipients list and the escrow transitions of spec §3.
import { describe, expect, test } from "bun:test";
import { bech32 } from "@scure/base";
import { escrowIdentity } from "../escrow/identity.ts";
import { getOrganization } from "../organizations/service.ts";
import { addInstallation, addOrganization, newRecipient } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { createLogger } from "../../log/index.ts";
import { tables } from "../db/index.ts";
import { effectiveRecipients, recipientsFor } from "./recipients.ts";
import { disableUnusableKeys } from "./service.ts";

describe("effectiveRecipients (pure)", () => {
  test("customer keys, plus escrow only when at least one customer key is active", () => {
    const escrow = { id: "key_E", recipient: "age1escrow" };
    expect(effectiveRecipients([], escrow)).toEqual([]);
    expect(effectiveRecipients([{ id: "key_A", publicKey: "age1a" }], null)).toEqual([{ key_id: "key_A", recipient: "age1a", kind: "customer" }]);
    expect(effectiveRecipients([{ id: "key_A", publicKey: "age1a" }], escrow)).toEqual([
      { key_id: "key_A", recipient: "age1a", kind: "customer" },
      { key_id: "key_E", recipient: "age1escrow", kind: "escrow" },
    ]);
  });
});

describe("audit-encryption keys", () => {
  test("create (201), list, get; an invalid recipient is 422 invalid_recipient; every change bumps the revision", async () => {
    const cp = await testControlPlane();
    const { recipient } = await newRecipient();
    const rev0 = (await getOrganization(cp.deps.db, cp.orgId)).revision;
    const created = await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "security", public_key: recipient } });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ name: "security", public_key: recipient, status: "active", disabled_at: null });
    expect(created.json.id).toStartWith("key_");
    expect((await getOrganization(cp.deps.db, cp.orgId)).revision).toBeGreaterThan(rev0);

    expect((await cp.call("GET", cp.org("/audit-encryption-keys"))).json).toEqual({ keys: [created.json] });
    expect((await cp.call("GET", cp.org(`/audit-encryption-keys/${created.json.id}`))).json).toEqual(created.json);
    expect((await cp.call("GET", cp.org("/audit-encryption-keys/key_NOPE"))).status).toBe(404);

    for (const bad of ["ssh-ed25519 AAAA", "age1qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq", recipient.slice(0, -1) + (recipient.endsWith("q") ? "p" : "q")]) {
      const res = await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "x", public_key: bad } });
      expect(res.status).toBe(422);
      expect(res.json.code).toBe("invalid_recipient");
    }
    expect((await cp.call("GET", cp.org("/audit-encryption-keys"))).json.keys).toHaveLength(1);
    expect((await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "again", public_key: recipient } })).status).toBe(409);
  });

  test("a low-order X25519 recipient is 422 invalid_recipient, saying why; nothing is registered", async () => {
    const cp = await testControlPlane();
    // the all-zero point and a point of order 8: well-formed age1 strings age cannot encrypt to
    for (const hex of ["00".repeat(32), "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800"]) {
      const publicKey = bech32.encode("age", bech32.toWords(Buffer.from(hex, "hex")));
      const res = await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "broken", public_key: publicKey } });
      expect(res.status).toBe(422);
      expect(res.json.code).toBe("invalid_recipient");
      expect(res.json.detail).toContain("low-order X25519 point");
    }
    expect((await cp.call("GET", cp.org("/audit-encryption-keys"))).json.keys).toHaveLength(0);
  });

  test("a low-order key registered before the check is disabled at start, saying why; usable keys are left alone", async () => {
    const cp = await testControlPlane();
    const { recipient } = await newRecipient();
    const good = (await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "good", public_key: recipient } })).json;
    // As an older control plane stored it, before registration refused low-order points.
    const lowOrder = bech32.encode("age", bech32.toWords(Buffer.from("e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800", "hex")));
    await cp.deps.db.insert(tables(cp.deps.db).auditKeys).values({ id: "key_OLDLOWORDER", orgId: cp.orgId, name: "old broken", publicKey: lowOrder, status: "active", createdAt: Date.now() });
    expect((await recipientsFor(cp.deps.db, cp.orgId)).map((r) => r.key_id)).toContain("key_OLDLOWORDER");
    const rev = (await getOrganization(cp.deps.db, cp.orgId)).revision;
    const lines: string[] = [];
    const log = createLogger("controlplane", (l) => lines.push(l));

    const disabled = await disableUnusableKeys({ ...cp.deps, log });
    expect(disabled.map((k) => k.id)).toEqual(["key_OLDLOWORDER"]);
    const listed = (await cp.call("GET", cp.org("/audit-encryption-keys"))).json.keys;
    expect(listed.find((k: { id: string }) => k.id === good.id)).toEqual(good);
    const old = listed.find((k: { id: string }) => k.id === "key_OLDLOWORDER");
    expect(old).toMatchObject({ status: "disabled", disabled_at: expect.any(String), disabled_reason: expect.stringContaining("low-order X25519 point") });
    // Runtimes get a new bundle without it; the log says which key and why.
    expect((await getOrganization(cp.deps.db, cp.orgId)).revision).toBeGreaterThan(rev);
    expect((await recipientsFor(cp.deps.db, cp.orgId)).map((r) => r.key_id)).toEqual([good.id]);
    expect(lines.join("")).toContain("key_OLDLOWORDER");
    expect(lines.join("")).toContain("low-order X25519 point");
    // A second start finds nothing to do; an admin's own disable has no reason.
    expect(await disableUnusableKeys(cp.deps)).toEqual([]);
    expect((await cp.call("POST", cp.org(`/audit-encryption-keys/${good.id}:disable`))).json.disabled_reason).toBeNull();
  });

  test("disabling is permanent: the key stays listed, a second disable is 409 key_disabled, the public key cannot come back", async () => {
    const cp = await testControlPlane();
    const { recipient } = await newRecipient();
    const key = (await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "k", public_key: recipient } })).json;
    const rev = (await getOrganization(cp.deps.db, cp.orgId)).revision;
    const disabled = await cp.call("POST", cp.org(`/audit-encryption-keys/${key.id}:disable`));
    expect(disabled.status).toBe(200);
    expect(disabled.json.status).toBe("disabled");
    expect(disabled.json.disabled_at).toBeString();
    expect((await getOrganization(cp.deps.db, cp.orgId)).revision).toBeGreaterThan(rev);

    const listed = (await cp.call("GET", cp.org("/audit-encryption-keys"))).json.keys;
    expect(listed).toEqual([disabled.json]);
    const second = await cp.call("POST", cp.org(`/audit-encryption-keys/${key.id}:disable`));
    expect(second.status).toBe(409);
    expect(second.json.code).toBe("key_disabled");
    const reregister = await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "k2", public_key: recipient } });
    expect(reregister.status).toBe(409);
    expect(reregister.json.detail).toContain("permanent");
    expect((await cp.call("POST", cp.org(`/audit-encryption-keys/${key.id}:enable`))).status).toBe(404);
    expect((await cp.call("POST", cp.org("/audit-encryption-keys/key_NOPE:disable"))).status).toBe(404);
  });

  test("runtime recipients with 0, 1 and 2 keys, and escrow transitions (spec §3)", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const recipients = async () =>
      (await cp.call("GET", "/api/v1/runtime/audit-encryption-recipients", { token: inst.token })).json.recipients as Array<{ key_id: string; kind: string; recipient: string }>;
    const bundleRecipients = async () => (await cp.call("GET", "/api/v1/runtime/policy-bundle", { token: inst.token })).json.recipients;

    expect(await recipients()).toEqual([]);
    // escrow refused without an active key
    const refused = await cp.call("PATCH", cp.org("/settings"), { body: { escrow_enabled: true } });
    expect(refused.status).toBe(409);
    expect(refused.json.code).toBe("escrow_requires_key");
    expect(refused.json.detail).toContain("customer audit-encryption key");
    expect((await cp.call("GET", cp.org("/settings"))).json).toEqual({ escrow_enabled: false, audit_retention_days: null, escrow_recipient: null, escrow_active: false });

    const a = (await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "a", public_key: (await newRecipient()).recipient } })).json;
    expect(await recipients()).toEqual([{ key_id: a.id, recipient: a.public_key, kind: "customer" }]);
    const b = (await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "b", public_key: (await newRecipient()).recipient } })).json;
    expect((await recipients()).map((r) => r.key_id)).toEqual([a.id, b.id]);

    const on = await cp.call("PATCH", cp.org("/settings"), { body: { escrow_enabled: true } });
    expect(on.status).toBe(200);
    expect(on.json.escrow_enabled).toBe(true);
    expect(on.json.escrow_active).toBe(true);
    expect(on.json.escrow_recipient).toStartWith("age1");
    const withEscrow = await recipients();
    expect(withEscrow.map((r) => r.kind)).toEqual(["customer", "customer", "escrow"]);
    expect(withEscrow[2]?.recipient).toBe(on.json.escrow_recipient);
    expect(await bundleRecipients()).toEqual(withEscrow);
    // the escrow identity is held wrapped by the KMS and matches the recipient
    const { identityToRecipient } = await import("age-encryption");
    expect(await identityToRecipient((await escrowIdentity(cp.deps, cp.orgId))!)).toBe(on.json.escrow_recipient);

    await cp.call("POST", cp.org(`/audit-encryption-keys/${a.id}:disable`));
    expect((await recipients()).map((r) => r.key_id)).toEqual([b.id, withEscrow[2]!.key_id]);
    // disabling the last active key: digest-only, escrow not listed either
    await cp.call("POST", cp.org(`/audit-encryption-keys/${b.id}:disable`));
    expect(await recipients()).toEqual([]);
    expect(await bundleRecipients()).toEqual([]);
    expect((await cp.call("GET", cp.org("/settings"))).json).toMatchObject({ escrow_enabled: true, escrow_active: false });

    // a new key brings escrow back, with the same escrow identity
    const c = (await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "c", public_key: (await newRecipient()).recipient } })).json;
    expect(await recipients()).toEqual([
      { key_id: c.id, recipient: c.public_key, kind: "customer" },
      { key_id: withEscrow[2]!.key_id, recipient: on.json.escrow_recipient, kind: "escrow" },
    ]);

    // switching escrow off removes it; on again reuses the stored identity
    expect((await cp.call("PATCH", cp.org("/settings"), { body: { escrow_enabled: false } })).json.escrow_enabled).toBe(false);
    expect((await recipients()).map((r) => r.kind)).toEqual(["customer"]);
    expect((await cp.call("PATCH", cp.org("/settings"), { body: { escrow_enabled: true } })).json.escrow_recipient).toBe(on.json.escrow_recipient);
  });

  test("another organization's admin cannot see or change this organization's keys or settings", async () => {
    const cp = await testControlPlane();
    const key = (await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "a", public_key: (await newRecipient()).recipient } })).json;
    const other = await addOrganization(cp);
    expect((await cp.call("GET", cp.org("/audit-encryption-keys"), { token: other.adminToken })).status).toBe(404);
    expect((await cp.call("GET", cp.org(`/audit-encryption-keys/${key.id}`), { token: other.adminToken })).status).toBe(404);
    expect((await cp.call("POST", cp.org(`/audit-encryption-keys/${key.id}:disable`), { token: other.adminToken })).status).toBe(404);
    expect((await cp.call("GET", cp.org("/settings"), { token: other.adminToken })).status).toBe(404);
    // within its own organization the key id does not exist
    expect((await cp.call("GET", other.org(`/audit-encryption-keys/${key.id}`), { token: other.adminToken })).status).toBe(404);
    expect((await cp.call("POST", other.org(`/audit-encryption-keys/${key.id}:disable`), { token: other.adminToken })).status).toBe(404);
    expect((await cp.call("GET", other.org("/audit-encryption-keys"), { token: other.adminToken })).json.keys).toEqual([]);
    expect((await cp.call("GET", cp.org(`/audit-encryption-keys/${key.id}`))).json.status).toBe("active");
  });
});

describe("the escrow key in the list (issue 15)", () => {
  test("absent before escrow is enabled; then listed as kind escrow with the id records name, active only while escrow is on", async () => {
    const cp = await testControlPlane();
    const { recipient } = await newRecipient();
    await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "security", public_key: recipient } });
    let keys = (await cp.call("GET", cp.org("/audit-encryption-keys"))).json.keys as { id: string; kind: string; status: string; public_key: string }[];
    expect(keys.map((k) => k.kind)).toEqual(["customer"]);
    const on = (await cp.call("PATCH", cp.org("/settings"), { body: { escrow_enabled: true } })).json;
    keys = (await cp.call("GET", cp.org("/audit-encryption-keys"))).json.keys;
    const escrow = keys.find((k) => k.kind === "escrow")!;
    expect(escrow).toMatchObject({ public_key: on.escrow_recipient, status: "active", name: "escrow (service-held, break-glass)" });
    const inst = await addInstallation(cp);
    const bundle = (await cp.call("GET", "/api/v1/runtime/policy-bundle", { token: inst.token })).json;
    expect(bundle.recipients.find((r: { kind: string }) => r.kind === "escrow").key_id).toBe(escrow.id);
    await cp.call("PATCH", cp.org("/settings"), { body: { escrow_enabled: false } });
    keys = (await cp.call("GET", cp.org("/audit-encryption-keys"))).json.keys;
    // the spec's two statuses: disabled while no records go to it, with why and what brings it back
    expect(keys.find((k) => k.kind === "escrow")).toMatchObject({ id: escrow.id, status: "disabled", disabled_reason: expect.stringContaining("escrow is switched off in the organization settings") });
  });

  test("GET answers the escrow key by its id, its status follows escrow and the customer keys; :disable is 409 escrow_key_not_disableable and changes nothing", async () => {
    const cp = await testControlPlane();
    const customer = (await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "security", public_key: (await newRecipient()).recipient } })).json;
    await cp.call("PATCH", cp.org("/settings"), { body: { escrow_enabled: true } });
    const escrowId = ((await cp.call("GET", cp.org("/audit-encryption-keys"))).json.keys as { id: string; kind: string }[]).find((k) => k.kind === "escrow")!.id;
    const one = await cp.call("GET", cp.org(`/audit-encryption-keys/${escrowId}`));
    expect(one.status).toBe(200);
    expect(one.json).toMatchObject({ id: escrowId, kind: "escrow", status: "active", disabled_reason: null });

    const refused = await cp.call("POST", cp.org(`/audit-encryption-keys/${escrowId}:disable`));
    expect(refused.status).toBe(409);
    expect(refused.json.code).toBe("escrow_key_not_disableable");
    expect(refused.json.detail).toContain("escrow_enabled");
    expect((await cp.call("GET", cp.org("/settings"))).json).toMatchObject({ escrow_enabled: true, escrow_active: true });

    // the last customer key disabled: escrow is on but receives nothing, and says why
    await cp.call("POST", cp.org(`/audit-encryption-keys/${customer.id}:disable`));
    expect((await cp.call("GET", cp.org(`/audit-encryption-keys/${escrowId}`))).json).toMatchObject({ status: "disabled", disabled_reason: expect.stringContaining("no customer key is active") });
    // another organization does not see it
    const other = await addOrganization(cp);
    expect((await cp.call("GET", other.org(`/audit-encryption-keys/${escrowId}`), { token: other.adminToken })).status).toBe(404);
    expect((await cp.call("POST", other.org(`/audit-encryption-keys/${escrowId}:disable`), { token: other.adminToken })).status).toBe(404);
  });
});
