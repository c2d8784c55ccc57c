// Claim rows stay bounded: live links capped per (installation, front-end user), old ones purged.
import { describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { tables } from "../db/index.ts";
import { addInstallation } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { inspectClaim, redeemClaim } from "./service.ts";

const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);

describe("claim link rows", () => {
  test("at most maxLiveClaimLinks unused links per (installation, user): the newest are kept", async () => {
    let now = 1_750_000_000_000;
    const cp = await testControlPlane({ now: () => now, config: { maxLiveClaimLinks: 2 } });
    const inst = await addInstallation(cp);
    const ask = async (user = "fe-1") => tokenOf((await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: user } })).json.url);
    const tokens: string[] = [];
    for (let i = 0; i < 5; i++) {
      tokens.push(await ask());
      now += 1000;
    }
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
