// Claim rows stay bounded: live links capped per (installation, front-end user), old ones purged.
import { describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { schema } from "../db/index.ts";
import { addInstallation } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { inspectClaim, redeemClaim } from "./service.ts";

const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);

describe("claim link rows", () => {
  test("at most maxLiveClaimLinks unused links per (installation, user): the newest are kept", async () => {
    let now = 1_750_000_000_000;
    const cp = await testControlPlane({ now: () => now, config: { maxLiveClaimLinks: 2 } });
    const inst = addInstallation(cp);
    const ask = async (user = "fe-1") => tokenOf((await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: user } })).json.url);
    const tokens: string[] = [];
    for (let i = 0; i < 5; i++) {
      tokens.push(await ask());
      now += 1000;
    }
    const other = await ask("fe-2");
    const rows = cp.deps.db.select().from(schema.claimLinks).where(eq(schema.claimLinks.remoteUserId, "fe-1")).all();
    expect(rows).toHaveLength(2);
    expect(() => inspectClaim(cp.deps, tokens[0]!)).toThrow(SvcError);
    expect(inspectClaim(cp.deps, tokens[3]!).remoteUserId).toBe("fe-1");
    expect(inspectClaim(cp.deps, tokens[4]!).remoteUserId).toBe("fe-1");
    expect(inspectClaim(cp.deps, other).remoteUserId).toBe("fe-2");
    // The newest still redeems.
    expect(redeemClaim(cp.deps, tokens[4]!, { email: "grace@example.com" }).remoteUserId).toBe("fe-1");
  });

  test("links expired or used more than a day ago are purged when a link is created", async () => {
    let now = 1_750_000_000_000;
    const cp = await testControlPlane({ now: () => now });
    const inst = addInstallation(cp);
    const ask = async (user: string) => tokenOf((await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: user } })).json.url);
    await ask("fe-expired");
    const used = await ask("fe-used");
    redeemClaim(cp.deps, used, { email: "used@example.com" });
    const count = () => cp.deps.db.select().from(schema.claimLinks).all().length;
    expect(count()).toBe(2);
    now += 12 * 3600 * 1000;
    await ask("fe-new");
    expect(count()).toBe(3); // expired and used, but not yet for a day
    now += 13 * 3600 * 1000;
    await ask("fe-newer");
    const left = cp.deps.db.select().from(schema.claimLinks).all().map((r) => r.remoteUserId).sort();
    expect(left).toEqual(["fe-new", "fe-newer"]);
  });
});
