import { describe, expect, test } from "bun:test";
import { parseRateRules, RateLimiter } from "./rate-limits.ts";

describe("rate limits", () => {
  test("rules from SVC_PROXY_RATE_LIMITS", () => {
    expect(parseRateRules("user=60/min, model:gpt-4o=20, tool=5/min")).toEqual([
      { per: "user", name: null, perMinute: 60 },
      { per: "model", name: "gpt-4o", perMinute: 20 },
      { per: "tool", name: null, perMinute: 5 },
    ]);
    expect(parseRateRules("")).toEqual([]);
    expect(() => parseRateRules("user:alice=5")).toThrow("takes no name");
    expect(() => parseRateRules("group=5")).toThrow("is not <user|model|tool>");
    expect(() => parseRateRules("tool=0")).toThrow("n ≥ 1");
  });

  test("a token bucket per key: bursts up to N, then N a minute; a refusal takes no token", () => {
    const rl = new RateLimiter(parseRateRules("user=2/min,tool:crm.update=1/min"));
    const t0 = 1_000_000;
    expect(rl.take({ user: "usr_a", tool: "crm.read" }, t0).ok).toBe(true);
    expect(rl.take({ user: "usr_a", tool: "crm.read" }, t0).ok).toBe(true);
    const refused = rl.take({ user: "usr_a", tool: "crm.read" }, t0);
    expect(refused).toEqual({ ok: false, retryAfterSeconds: 30, limit: "user=2/min", message: "Refused (svc.rate_limited): each user may make 2 requests a minute; try again in 30 s" });
    expect(rl.take({ user: "usr_b", tool: "crm.read" }, t0).ok).toBe(true); // another user's bucket
    expect(rl.take({ user: "usr_a", tool: "crm.read" }, t0 + 30_000).ok).toBe(true); // refilled one
    // the tool rule: usr_b's update takes the tool's only token; usr_c is refused by it and
    // keeps its own user token for the next call
    expect(rl.take({ user: "usr_b", tool: "crm.update" }, t0).ok).toBe(true);
    const tool = rl.take({ user: "usr_c", tool: "crm.update" }, t0);
    expect(tool.ok ? null : tool.message).toBe("Refused (svc.rate_limited): tool crm.update may make 1 requests a minute; try again in 60 s");
    expect(tool.ok ? null : tool.limit).toBe("tool:crm.update=1/min");
    expect(rl.take({ user: "usr_c", tool: "crm.read" }, t0).ok).toBe(true);
    expect(rl.take({ user: "usr_c", tool: "crm.read" }, t0).ok).toBe(true);
  });
});
