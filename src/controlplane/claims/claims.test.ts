// Claim links: created by the runtime, inspected and redeemed by the console.
import { describe, expect, test } from "bun:test";
import { SvcError } from "../../contract/errors.ts";
import { eq } from "drizzle-orm";
import { tables } from "../db/index.ts";
import { actingAsSystem } from "../audit/admin-events.ts";
import { linkByHand } from "../directory/by-hand.ts";
import { findRemoteIdentity, findUserByEmail, identityMap, upsertUserByEmail } from "../directory/service.ts";
import { addInstallation, addOrganization } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { inspectClaim, redeemClaim } from "./service.ts";

const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);

async function codeOf(fn: () => unknown): Promise<string | null> {
  try {
    await fn();
    return null;
  } catch (e) {
    return e instanceof SvcError ? e.code : String(e);
  }
}

describe("claim links", () => {
  test("create, inspect, redeem: the front-end user is linked and appears in the identity map", async () => {
    let now = 1_750_000_000_000;
    const cp = await testControlPlane({ now: () => now });
    const inst = await addInstallation(cp);
    const res = await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: "fe-42", email: "grace@example.com", name: "Grace" } });
    expect(res.status).toBe(200);
    expect(res.json.url).toStartWith(`${cp.deps.config.publicUrl}/claim/svc_cl_`);
    expect(res.json.expires_at).toBe(new Date(now + cp.deps.config.claimTtlSeconds * 1000).toISOString());
    // the front-end user is noted, unlinked
    expect(await findRemoteIdentity(cp.deps.db, cp.orgId, "fe-42")).toMatchObject({ userId: null, installationId: inst.installationId, email: "grace@example.com" });

    const token = tokenOf(res.json.url);
    expect(await inspectClaim(cp.deps, token)).toMatchObject({
      orgId: cp.orgId,
      installationId: inst.installationId,
      remoteUserId: "fe-42",
      remoteEmail: "grace@example.com",
      remoteDisplayName: "Grace",
    });

    now += 60_000;
    const revBefore = (await cp.call("GET", "/api/v1/runtime/policy-bundle", { token: inst.token })).json.revision;
    const out = await redeemClaim(cp.deps, token, { email: "Grace@Example.com", displayName: "Grace H." });
    const user = (await findUserByEmail(cp.deps.db, cp.orgId, "grace@example.com"))!;
    expect(user.source).toBe("claim");
    expect(out).toMatchObject({ orgId: cp.orgId, userId: user.id, userCreated: true, remoteUserId: "fe-42" });
    expect(await identityMap(cp.deps.db, cp.orgId)).toEqual([
      { remote_user_id: "fe-42", user_id: user.id, email: "grace@example.com", groups: [], attributes: { display_name: "Grace H.", source: "claim" } },
    ]);
    const bundle = (await cp.call("GET", "/api/v1/runtime/policy-bundle", { token: inst.token })).json;
    expect(bundle.revision).toBeGreaterThan(revBefore);
    expect(bundle.identities.map((i: { remote_user_id: string }) => i.remote_user_id)).toEqual(["fe-42"]);

    // second redemption: 410 claim_used, from inspect and redeem alike
    expect(await codeOf(async () => redeemClaim(cp.deps, token, { email: "mallory@example.com" }))).toBe("claim_used");
    expect(await codeOf(async () => inspectClaim(cp.deps, token))).toBe("claim_used");
    expect(await findUserByEmail(cp.deps.db, cp.orgId, "mallory@example.com")).toBeUndefined();
    expect((await findRemoteIdentity(cp.deps.db, cp.orgId, "fe-42"))?.userId).toBe(user.id);
  });

  test("an existing service user is linked, not duplicated", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const { user } = await upsertUserByEmail(cp.deps.db, cp.orgId, { email: "ada@example.com", source: "directory" });
    const url = (await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: "fe-ada" } })).json.url;
    const out = await redeemClaim(cp.deps, tokenOf(url), { email: "ada@example.com" });
    expect(out.userId).toBe(user.id);
    expect(out.userCreated).toBe(false);
    expect((await findUserByEmail(cp.deps.db, cp.orgId, "ada@example.com"))?.source).toBe("directory");
  });

  test("an expired link is 410 claim_expired and links nothing; an unknown one is 404", async () => {
    let now = 1_750_000_000_000;
    const cp = await testControlPlane({ now: () => now });
    const inst = await addInstallation(cp);
    const url = (await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: "fe-late" } })).json.url;
    now += cp.deps.config.claimTtlSeconds * 1000;
    expect(await codeOf(async () => inspectClaim(cp.deps, tokenOf(url)))).toBe("claim_expired");
    let err: unknown;
    try {
      await redeemClaim(cp.deps, tokenOf(url), { email: "late@example.com" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(SvcError);
    expect((err as SvcError).status).toBe(410);
    expect((err as SvcError).code).toBe("claim_expired");
    expect((err as SvcError).message).toContain("expired");
    expect((await findRemoteIdentity(cp.deps.db, cp.orgId, "fe-late"))?.userId).toBeNull();
    expect(await findUserByEmail(cp.deps.db, cp.orgId, "late@example.com")).toBeUndefined();

    expect(await codeOf(async () => inspectClaim(cp.deps, "svc_cl_unknown"))).toBe("not_found");
    expect(await codeOf(async () => redeemClaim(cp.deps, "svc_rt_wrongkind", { email: "x@example.com" }))).toBe("not_found");
  });

  test("two racing redemptions: exactly one wins", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const url = (await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: "fe-race" } })).json.url;
    const results = await Promise.allSettled([
      Promise.resolve().then(async () => redeemClaim(cp.deps, tokenOf(url), { email: "one@example.com" })),
      Promise.resolve().then(async () => redeemClaim(cp.deps, tokenOf(url), { email: "two@example.com" })),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const rejected = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect((rejected.reason as SvcError).code).toBe("claim_used");
  });

  test("claim links are per organization and need a runtime token", async () => {
    const cp = await testControlPlane();
    const other = await addOrganization(cp);
    const inst = await addInstallation(cp, { orgId: other.orgId, workspaceId: other.workspaceId });
    const url = (await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: "fe-1" } })).json.url;
    const out = await redeemClaim(cp.deps, tokenOf(url), { email: "owner@example.com" });
    expect(out.orgId).toBe(other.orgId);
    expect(await identityMap(cp.deps.db, cp.orgId)).toEqual([]);
    expect(await identityMap(cp.deps.db, other.orgId)).toHaveLength(1);
    expect((await cp.call("POST", "/api/v1/runtime/claims", { token: cp.adminToken, body: { remote_user_id: "fe-1" } })).status).toBe(401);
    expect((await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: "" } })).status).toBe(422);
  });

  test("no link for an identity already linked, or first seen through another installation (409)", async () => {
    const cp = await testControlPlane();
    const a = await addInstallation(cp);
    const b = await addInstallation(cp);
    const claim = async (token: string, remote: string) => cp.call("POST", "/api/v1/runtime/claims", { token, body: { remote_user_id: remote } });
    // linked (by a redeemed claim): neither installation gets a link that could move it
    const url = (await claim(a.token, "fe-ada")).json.url;
    await redeemClaim(cp.deps, tokenOf(url), { email: "ada@example.com" });
    for (const inst of [a, b]) {
      const res = await claim(inst.token, "fe-ada");
      expect(res.status).toBe(409);
      expect(res.json.code).toBe(inst === a ? "identity_already_linked" : "identity_other_installation");
    }
    // linked by an admin without an installation: no link either
    await upsertUserByEmail(cp.deps.db, cp.orgId, { email: "bo@example.com", source: "manual" });
    await linkByHand(cp.deps.db, cp.orgId, "bo@example.com", { platform: "chatui", remoteUserId: "fe-bo" }, actingAsSystem(cp.deps, "controlplane"));
    expect((await claim(b.token, "fe-bo")).json.code).toBe("identity_already_linked");
    // unlinked, but first seen through a: b cannot issue a link for it; a still can
    expect((await claim(a.token, "fe-new")).status).toBe(200);
    const other = await claim(b.token, "fe-new");
    expect(other.status).toBe(409);
    expect(other.json.code).toBe("identity_other_installation");
    expect(other.json.detail).toContain("another installation");
    expect((await claim(a.token, "fe-new")).status).toBe(200);
    expect((await findRemoteIdentity(cp.deps.db, cp.orgId, "fe-new"))?.installationId).toBe(a.installationId);
  });

  test("redeem refuses to move a linked identity or one of another installation; the same user is a no-op", async () => {
    let now = 1_750_000_000_000;
    const cp = await testControlPlane({ now: () => now });
    const a = await addInstallation(cp);
    const b = await addInstallation(cp);
    const link = async (inst: typeof a, remote: string) => tokenOf((await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: remote } })).json.url);
    // two links for the same unlinked user: the first redemption links, the second (another person) is refused
    const first = await link(a, "fe-x");
    now += cp.deps.config.claimTtlSeconds * 1000 - 60_000; // near its expiry: the next ask is a new link
    const second = await link(a, "fe-x");
    expect(second).not.toBe(first);
    const ada = await redeemClaim(cp.deps, first, { email: "ada@example.com" });
    expect(await codeOf(async () => redeemClaim(cp.deps, second, { email: "mallory@example.com" }))).toBe("identity_already_linked");
    expect((await findRemoteIdentity(cp.deps.db, cp.orgId, "fe-x"))?.userId).toBe(ada.userId);
    expect(await findUserByEmail(cp.deps.db, cp.orgId, "mallory@example.com")).toBeUndefined(); // rolled back
    // the refused link was not used up: the rightful user may still redeem it, idempotently
    const again = await redeemClaim(cp.deps, second, { email: "ada@example.com" });
    expect(again).toMatchObject({ userId: ada.userId, userCreated: false, remoteIdentityId: ada.remoteIdentityId });
    // a link whose installation is not the identity's is refused
    const stray = await link(a, "fe-y");
    await cp.deps.db
      .update(tables(cp.deps.db).claimLinks)
      .set({ installationId: b.installationId })
      .where(eq(tables(cp.deps.db).claimLinks.remoteUserId, "fe-y"));
    expect(await codeOf(async () => redeemClaim(cp.deps, stray, { email: "eve@example.com" }))).toBe("identity_other_installation");
    expect((await findRemoteIdentity(cp.deps.db, cp.orgId, "fe-y"))?.userId).toBeNull();
  });

  test("an installation's bundle carries only its own identities and those an admin linked without an installation", async () => {
    const cp = await testControlPlane();
    const a = await addInstallation(cp);
    const b = await addInstallation(cp);
    const url = (await cp.call("POST", "/api/v1/runtime/claims", { token: a.token, body: { remote_user_id: "fe-a" } })).json.url;
    await redeemClaim(cp.deps, tokenOf(url), { email: "a@example.com" });
    await upsertUserByEmail(cp.deps.db, cp.orgId, { email: "admin-linked@example.com", source: "manual" });
    await linkByHand(cp.deps.db, cp.orgId, "admin-linked@example.com", { platform: "chatui", remoteUserId: "fe-everywhere" }, actingAsSystem(cp.deps, "controlplane"));
    const ids = async (inst: typeof a) =>
      ((await cp.call("GET", "/api/v1/runtime/policy-bundle", { token: inst.token })).json.identities as { remote_user_id: string }[]).map((i) => i.remote_user_id).sort();
    expect(await ids(a)).toEqual(["fe-a", "fe-everywhere"]);
    expect(await ids(b)).toEqual(["fe-everywhere"]);
    expect((await identityMap(cp.deps.db, cp.orgId)).map((i) => i.remote_user_id).sort()).toEqual(["fe-a", "fe-everywhere"]);
  });
});
