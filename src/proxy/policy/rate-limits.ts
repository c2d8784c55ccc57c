// Requests-per-minute limits (issue 16; docs/proxy.md "Rate limits"), token buckets in this
// proxy. A rule limits each user, each model or each tool (or one named model or tool) to N
// requests a minute, with bursts up to N; a call is refused when any rule that applies has no
// token left, and then takes no token from any. Buckets are per replica: with R replicas an
// installation allows up to R × N. Pure: the caller passes the time.
import { REFUSAL_CODES } from "../../contract/errors.ts";

export type RateRule = { per: "user" | "model" | "tool"; name: string | null; perMinute: number };

/** `user=60/min,model=100/min,model:gpt-4o=20/min,tool:crm.update=10/min` (the `/min` is optional). */
export function parseRateRules(text: string): RateRule[] {
  const rules: RateRule[] = [];
  for (const item of text
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const m = /^(user|model|tool)(?::([^=]+))?=(\d+)(?:\/min)?$/.exec(item);
    if (!m || Number(m[3]) < 1) throw new Error(`"${item}" is not <user|model|tool>[:<name>]=<n>/min with n ≥ 1 (e.g. user=60/min, tool:crm.update=10/min)`);
    if (m[1] === "user" && m[2]) throw new Error(`"${item}": a user rule applies to every user; it takes no name`);
    rules.push({ per: m[1] as RateRule["per"], name: m[2]?.trim() ?? null, perMinute: Number(m[3]) });
  }
  return rules;
}

/** A rule as SVC_PROXY_RATE_LIMITS writes it: `user=60/min`, `tool:crm.update=10/min`. */
export function ruleText(r: RateRule): string {
  return `${r.per}${r.name !== null ? `:${r.name}` : ""}=${r.perMinute}/min`;
}

type Bucket = { tokens: number; at: number };

export type RateCall = { user: string; model?: string | null; tool?: string | null };
/** A refusal names the rule that refused (`tool:crm.read=10/min`), for the audit record. */
export type RateVerdict = { ok: true } | { ok: false; message: string; retryAfterSeconds: number; limit: string };
const OK: RateVerdict = { ok: true };

/** Buckets idle this long are full again and dropped, so the map does not grow forever. */
const IDLE_MS = 5 * 60_000;

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private lastSweep = 0;

  constructor(readonly rules: readonly RateRule[]) {}

  /** Takes one token from every bucket that applies, or none when one is empty. */
  take(call: RateCall, now: number): RateVerdict {
    if (this.rules.length === 0) return OK;
    this.sweep(now);
    const hit: Bucket[] = [];
    for (let i = 0; i < this.rules.length; i++) {
      const r = this.rules[i]!;
      const key = r.per === "user" ? call.user : r.per === "model" ? call.model : call.tool;
      if (key === null || key === undefined || (r.name !== null && r.name !== key)) continue;
      const id = `${i}\u0000${key}`;
      let b = this.buckets.get(id);
      if (!b) this.buckets.set(id, (b = { tokens: r.perMinute, at: now }));
      b.tokens = Math.min(r.perMinute, b.tokens + ((now - b.at) * r.perMinute) / 60_000);
      b.at = now;
      if (b.tokens < 1) {
        const wait = Math.max(1, Math.ceil(((1 - b.tokens) * 60) / r.perMinute));
        const what = r.per === "user" ? "each user" : r.name ? `${r.per} ${r.name}` : `each ${r.per}`;
        return { ok: false, retryAfterSeconds: wait, limit: ruleText(r), message: `Refused (${REFUSAL_CODES.rateLimited}): ${what} may make ${r.perMinute} requests a minute; try again in ${wait} s` };
      }
      hit.push(b);
    }
    for (const b of hit) b.tokens -= 1;
    return OK;
  }

  private sweep(now: number): void {
    if (now - this.lastSweep < IDLE_MS) return;
    this.lastSweep = now;
    for (const [id, b] of this.buckets) if (now - b.at > IDLE_MS) this.buckets.delete(id);
  }
}
