import { describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { tables } from "../db/index.ts";
import { addOrganization, newRecipient } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { getOrganization } from "./service.ts";
import { escrowContext } from "../escrow/identity.ts";

describe("GET/PATCH /organizations/{org}/settings", () => {
  test("defaults to escrow off with no recipient", async () => {
    const cp = await testControlPlane();
    const res = await cp.call("GET", cp.org("/settings"));
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ escrow_enabled: false, audit_retention_days: null, escrow_recipient: null, escrow_active: false });
  });

  test("a change bumps the revision once; a no-op does not; a bad body is 422", async () => {
    const cp = await testControlPlane();
    await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "a", public_key: (await newRecipient()).recipient } });
    const rev = (await getOrganization(cp.deps.db, cp.orgId)).revision;
    expect((await cp.call("PATCH", cp.org("/settings"), { body: { escrow_enabled: true } })).status).toBe(200);
    expect((await getOrganization(cp.deps.db, cp.orgId)).revision).toBe(rev + 1);
    await cp.call("PATCH", cp.org("/settings"), { body: { escrow_enabled: true } });
    await cp.call("PATCH", cp.org("/settings"), { body: {} });
    expect((await getOrganization(cp.deps.db, cp.orgId)).revision).toBe(rev + 1);
    expect((await cp.call("PATCH", cp.org("/settings"), { body: { escrow_enabled: "yes" } })).status).toBe(422);
  });

  test("the escrow identity is stored wrapped by the KMS under escrow:<org>, never in clear", async () => {
    const cp = await testControlPlane();
    await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "a", public_key: (await newRecipient()).recipient } });
    const on = (await cp.call("PATCH", cp.org("/settings"), { body: { escrow_enabled: true } })).json;
    const row = (
      await cp.deps.db
        .select()
        .from(tables(cp.deps.db).escrowKeys)
        .where(eq(tables(cp.deps.db).escrowKeys.orgId, cp.orgId))
    )[0]!;
    expect(row.recipient).toBe(on.escrow_recipient);
    expect(row.wrappedIdentity).not.toContain("AGE-SECRET-KEY");
    expect(new TextDecoder().decode(cp.deps.kms.unwrap(row.wrappedIdentity, escrowContext(cp.orgId)))).toStartWith("AGE-SECRET-KEY-1");
    expect(() => cp.deps.kms.unwrap(row.wrappedIdentity, "escrow:org_OTHER")).toThrow();
  });

  test("members of another organization get 404; a runtime token gets 401", async () => {
    const cp = await testControlPlane();
    const other = await addOrganization(cp);
    expect((await cp.call("PATCH", cp.org("/settings"), { token: other.adminToken, body: { escrow_enabled: false } })).status).toBe(404);
    expect((await cp.call("GET", other.org("/settings"), { token: other.adminToken })).json.escrow_enabled).toBe(false);
    const { addInstallation } = await import("../runtime/fixtures.ts");
    expect((await cp.call("GET", cp.org("/settings"), { token: (await addInstallation(cp)).token })).status).toBe(401);
  });
});
