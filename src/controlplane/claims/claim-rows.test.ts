// Claim rows stay bounded: live links capped per (installation, front-end user), old ones purged.
import { describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { tables } from "../db/index.ts";
import { addInstallation } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { CLAIM_REUSE_MIN_MS, inspectClaim, redeemClaim } from "./service.ts";

const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);

describe("claim link rows", () => {
  test("at most maxLiveClaimLinks unused links per (installation, user): the newest are kept", async () => {
    let now = 1_750_000_000_000;
    const cp = await testControlPlane({ now: () => now, config: { maxLiveClaimLinks: 2 } });
    const inst = await addInstallation(cp);
    const ask = async (user = "fe-1") => tokenOf((await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: user } })).json.url);
    const tokens: string[] = [];
    // A live link is handed out again; links that cannot be (made before token_sealed, or
    // sealed under another master key, or created by racing requests) still count to the cap.
    const c0 = tables(cp.deps.db).claimLinks;
    for (let i = 0; i < 5; i++) {
      tokens.push(await ask());
      await cp.deps.db.update(c0).set({ tokenSealed: null });
      now += 1000;
    }
    expect(new Set(tokens).size).toBe(5);
    const other = await ask("fe-2");
    const c = tables(cp.deps.db).claimLinks;
    const rows = await cp.deps.db.select().from(c).where(eq(c.remoteUserId, "fe-1"));
    expect(rows).toHaveLength(2);
    await expect(inspectClaim(cp.deps, tokens[0]!)).rejects.toThrow(SvcError);
    expect((await inspectClaim(cp.deps, tokens[3]!)).remoteUserId).toBe("fe-1");
    expect((await inspectClaim(cp.deps, tokens[4]!)).remoteUserId).toBe("fe-1");
    expect((await inspectClaim(cp.deps, other)).remoteUserId).toBe("fe-2");
    // The newest still redeems.
    expect((await redeemClaim(cp.deps, tokens[4]!, { email: "grace@example.com" })).remoteUserId).toBe("fe-1");
  });

  test("a live link is handed out again: no new link and no new row per retry, until it is used or near its expiry", async () => {
    let now = 1_750_000_000_000;
    const cp = await testControlPlane({ now: () => now });
    const inst = await addInstallation(cp);
    const other = await addInstallation(cp);
    const ask = async (user = "fe-1", token = inst.token) => (await cp.call("POST", "/api/v1/runtime/claims", { token, body: { remote_user_id: user } })).json as { url: string; expires_at: string };
    const c = tables(cp.deps.db).claimLinks;
    const rows = async () => (await cp.deps.db.select().from(c)).length;
    const first = await ask();
    now += 60_000;
    const retries = [await ask(), await ask(), await ask()];
    expect(retries).toEqual([first, first, first]); // same URL, same expiry
    expect(await rows()).toBe(1);
    // the stored row holds the token wrapped, never in clear
    const [row] = await cp.deps.db.select().from(c);
    expect(row!.tokenSealed).toStartWith("kms1:");
    expect(row!.tokenSealed).not.toContain(tokenOf(first.url));
    // another front-end user gets a link of their own
    expect((await ask("fe-2")).url).not.toBe(first.url);
    // near its expiry (less than CLAIM_REUSE_MIN_MS left) a new link is issued
    now = Date.parse(first.expires_at) - CLAIM_REUSE_MIN_MS + 1;
    const renewed = await ask();
    expect(renewed.url).not.toBe(first.url);
    expect(await ask()).toEqual(renewed);
    // a used link is never handed out again
    await redeemClaim(cp.deps, tokenOf(renewed.url), { email: "grace@example.com" });
    expect((await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: "fe-1" } })).status).toBe(409); // now linked
    expect((await ask("fe-3")).url).not.toBe(renewed.url);
    // a link is only reused for the installation that asked
    expect((await cp.call("POST", "/api/v1/runtime/claims", { token: other.token, body: { remote_user_id: "fe-2" } })).status).toBe(409);
  });

  test("links expired or used more than a day ago are purged when a link is created", async () => {
    let now = 1_750_000_000_000;
    const cp = await testControlPlane({ now: () => now });
    const inst = await addInstallation(cp);
    const ask = async (user: string) => tokenOf((await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: user } })).json.url);
    await ask("fe-expired");
    const used = await ask("fe-used");
    await redeemClaim(cp.deps, used, { email: "used@example.com" });
    const count = async () => (await cp.deps.db.select().from(tables(cp.deps.db).claimLinks)).length;
    expect(await count()).toBe(2);
    now += 12 * 3600 * 1000;
    await ask("fe-new");
    expect(await count()).toBe(3); // expired and used, but not yet for a day
    now += 13 * 3600 * 1000;
    await ask("fe-newer");
    const left = (await cp.deps.db.select().from(tables(cp.deps.db).claimLinks)).map((r) => r.remoteUserId).sort();
    expect(left).toEqual(["fe-new", "fe-newer"]);
  });
});
