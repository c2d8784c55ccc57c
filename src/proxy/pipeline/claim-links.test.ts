// Claim links never hold a refusal back: a control plane that does not answer costs a refusal
// at most the wait, and nothing at all once a creation failed; a link that arrives late is
// handed out at the next refusal.
import { describe, expect, test } from "bun:test";
import { silentLogger } from "../../log/index.ts";
import type { ClaimResponse } from "../../contract/runtime-api.ts";
import { ClaimLinks } from "./claim-links.ts";

const user = { id: "u-1", email: "u1@example.com" };
const inAnHour = () => new Date(Date.now() + 3_600_000).toISOString();

/** A claims call the test settles by hand; counts the calls. */
function controlledClaims() {
  const calls: { resolve: (c: ClaimResponse) => void; reject: (e: Error) => void }[] = [];
  const createClaim = async () => new Promise<ClaimResponse>((resolve, reject) => calls.push({ resolve, reject }));
  return { calls, createClaim };
}

describe("claim links on the refusal path", () => {
  test("a control plane that never answers holds one refusal for the wait, and the next ones not at all", async () => {
    const cp = controlledClaims();
    const links = new ClaimLinks({ createClaim: cp.createClaim, log: silentLogger, waitMs: 20 });
    expect(links.willWait()).toBe(true);
    expect(await links.forRefusal(user)).toBeUndefined();
    expect(cp.calls).toHaveLength(1);
    expect(links.willWait()).toBe(false);
    expect(await links.forRefusal({ id: "u-2" })).toBeUndefined();
    expect(cp.calls).toHaveLength(2);
    // the late answer is kept for the next refusal, which then needs no call at all
    cp.calls[0]!.resolve({ url: "https://cp/claim/abc", expires_at: inAnHour() });
    await Bun.sleep(0);
    expect(await links.forRefusal(user)).toBe("https://cp/claim/abc");
    expect(cp.calls).toHaveLength(2);
    expect(links.willWait()).toBe(true); // it answered: refusals may wait for links again
  });

  test("a link that comes within the wait is in the refusal", async () => {
    const links = new ClaimLinks({ createClaim: async () => ({ url: "https://cp/claim/x", expires_at: inAnHour() }), log: silentLogger, waitMs: 60_000 });
    expect(await links.forRefusal(user)).toBe("https://cp/claim/x");
  });

  test("after a failed creation, refusals do not wait at all (creation is still tried, once per user)", async () => {
    const cp = controlledClaims();
    const errors: unknown[] = [];
    const links = new ClaimLinks({ createClaim: cp.createClaim, log: silentLogger, waitMs: 60_000, onError: (e) => errors.push(e) });
    const first = links.forRefusal(user);
    cp.calls[0]!.reject(new Error("control plane unreachable"));
    expect(await first).toBeUndefined();
    expect(errors).toHaveLength(1);
    // a wait of 60 s would time the test out: it must answer at once
    expect(await links.forRefusal(user)).toBeUndefined();
    expect(await links.forRefusal(user)).toBeUndefined();
    expect(cp.calls).toHaveLength(2); // one new creation in flight, not one per refusal
  });

  test("a kept link is not handed out once it is about to expire", async () => {
    let n = 0;
    const links = new ClaimLinks({ createClaim: async () => ({ url: `https://cp/claim/${++n}`, expires_at: new Date(Date.now() + 30_000).toISOString() }), log: silentLogger });
    expect(await links.forRefusal(user)).toBe("https://cp/claim/1");
    expect(await links.forRefusal(user)).toBe("https://cp/claim/2");
  });
});
