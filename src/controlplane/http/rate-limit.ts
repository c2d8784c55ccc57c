// Abuse limits shared by every control-plane replica: fixed-window counters in the store's
// rate_limit_windows table, one row per (scope, key), on the deps clock. A hit is one atomic
// upsert, so concurrent hits on several replicas are all counted, and a restart forgets
// nothing. Keys are emails and client IPs, stored only as SHA-256 hashes (of a fixed prefix
// and the key). Ended windows are deleted a batch at a time every SWEEP_EVERY hits of a limiter.
//
// The client IP is the socket's peer address (Bun's server.requestIP), recorded for each
// request by `clientIpPlugin`. X-Forwarded-For is read only when the operator says a trusted
// proxy sits in front (SVC_CP_TRUST_FORWARDED_FOR=1), and then only its last entry: the
// address that proxy saw.
import { loggableError } from "../db/errors.ts";
import { type RequestOrigin, carriedOrigin, peerOf } from "./request-gate.ts";
import { createHash } from "node:crypto";
import { and, eq, inArray, lte, sql } from "drizzle-orm";
import { Elysia } from "elysia";
import { SvcError } from "../../contract/errors.ts";
import { tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";

export { DEFAULT_RATE_LIMITS, type RateLimitConfig } from "./rate-limit-config.ts";

/** Hashed before storage: the table never holds an email or an address. */
const KEY_PREFIX = "svc rate-limit key\0";
/** A limiter sweeps its ended windows once every this many hits… */
const SWEEP_EVERY = 100;
/** …deleting at most this many: more than it can have created since the last sweep. */
const SWEEP_BATCH = 500;

export function hashedKey(key: string): string {
  return createHash("sha256")
    .update(KEY_PREFIX + key)
    .digest("hex");
}

type Window = { windowStart: number; count: number };

export type LimiterOptions = { scope: string; limit: number; windowMs: number; sweepEvery?: number; sweepBatch?: number };

export class FixedWindowLimiter {
  readonly scope: string;
  readonly limit: number;
  readonly windowMs: number;
  readonly #sweepEvery: number;
  readonly #sweepBatch: number;
  #hits = 0;

  constructor(
    readonly deps: Pick<ControlPlaneDeps, "db" | "now" | "log">,
    o: LimiterOptions,
  ) {
    this.scope = o.scope;
    this.limit = o.limit;
    this.windowMs = o.windowMs;
    this.#sweepEvery = o.sweepEvery ?? SWEEP_EVERY;
    this.#sweepBatch = o.sweepBatch ?? SWEEP_BATCH;
  }

  /** Seconds until the window ends when it holds more events than the limit, else 0. */
  #waitFor(w: Window | undefined, now: number): number {
    if (!w || now - w.windowStart >= this.windowMs || w.count <= this.limit) return 0;
    return Math.max(1, Math.ceil((w.windowStart + this.windowMs - now) / 1000));
  }

  /**
   * Counts one event for the key (one upsert: a window that has ended starts again at 1).
   * Returns the seconds to wait when this event went past the limit, else 0: a caller that
   * counts before acting gets check and count in one atomic step.
   */
  async hit(key: string): Promise<number> {
    return (await this.count(key)).wait;
  }

  /**
   * `hit`, also telling how many events the window holds with this one: the first event past
   * the limit (`count === limit + 1`) is the moment a key becomes locked out.
   */
  async count(key: string): Promise<{ wait: number; count: number }> {
    const { db, now: clock } = this.deps;
    const w = tables(db).rateLimitWindows;
    const now = clock();
    const ended = sql`${w.windowStart} <= ${now - this.windowMs}`;
    const [row] = await db
      .insert(w)
      .values({ scope: this.scope, key: hashedKey(key), windowStart: now, count: 1 })
      .onConflictDoUpdate({
        target: [w.scope, w.key],
        set: {
          count: sql`case when ${ended} then 1 else ${w.count} + 1 end`,
          windowStart: sql`case when ${ended} then ${now} else ${w.windowStart} end`,
        },
      })
      .returning({ windowStart: w.windowStart, count: w.count });
    if (++this.#hits % this.#sweepEvery === 0) await this.sweep();
    return { wait: this.#waitFor(row, now), count: row?.count ?? 1 };
  }

  /** Takes one event back (one update; never below 0): an attempt counted first that turned out fine. */
  async unhit(key: string): Promise<void> {
    const w = tables(this.deps.db).rateLimitWindows;
    await this.deps.db
      .update(w)
      .set({ count: sql`case when ${w.count} > 0 then ${w.count} - 1 else 0 end` })
      .where(and(eq(w.scope, this.scope), eq(w.key, hashedKey(key))));
  }

  /** Forgets the key's window. */
  async reset(key: string): Promise<void> {
    const w = tables(this.deps.db).rateLimitWindows;
    await this.deps.db.delete(w).where(and(eq(w.scope, this.scope), eq(w.key, hashedKey(key))));
  }

  /** Deletes up to a batch of this scope's ended windows; a failure is logged, never thrown. */
  async sweep(): Promise<void> {
    const { db } = this.deps;
    const w = tables(db).rateLimitWindows;
    // Ended in the outer condition too: on PostgreSQL a window restarted by a concurrent hit
    // after the subquery read it is re-checked and kept.
    const ended = and(eq(w.scope, this.scope), lte(w.windowStart, this.deps.now() - this.windowMs));
    try {
      await db.delete(w).where(and(ended, inArray(w.key, db.select({ key: w.key }).from(w).where(ended).limit(this.#sweepBatch))));
    } catch (e) {
      this.deps.log.warn("rate-limit sweep failed", { scope: this.scope, error: loggableError(e) });
    }
  }
}

type Limiters = {
  signInEmail: FixedWindowLimiter;
  signInIp: FixedWindowLimiter;
  loginRequestIp: FixedWindowLimiter;
};

const perDeps = new WeakMap<ControlPlaneDeps, Limiters>();

/** The limiters of `deps` (made once per deps: they only hold its config and a sweep count). */
export function limiters(deps: ControlPlaneDeps): Limiters {
  let l = perDeps.get(deps);
  if (!l) {
    const c = deps.config.rateLimits;
    l = {
      signInEmail: new FixedWindowLimiter(deps, { scope: "sign_in_email", limit: c.signInFailuresPerEmail, windowMs: c.signInWindowSeconds * 1000 }),
      signInIp: new FixedWindowLimiter(deps, { scope: "sign_in_ip", limit: c.signInFailuresPerIp, windowMs: c.signInWindowSeconds * 1000 }),
      loginRequestIp: new FixedWindowLimiter(deps, { scope: "login_request_ip", limit: c.loginRequestsPerIp, windowMs: c.loginRequestWindowSeconds * 1000 }),
    };
    perDeps.set(deps, l);
  }
  return l;
}

/** 429 rate_limited; `retry_after_seconds` becomes the Retry-After header (see withRetryAfter). */
export function rateLimited(message: string, retryAfterSeconds: number, extra: Record<string, unknown> = {}): SvcError {
  return new SvcError("rate_limited", message, { retry_after_seconds: retryAfterSeconds, ...extra });
}

/** Runs a route handler and, when it is refused as rate_limited, sets the Retry-After header. */
export async function withRetryAfter<T>(set: { headers: Record<string, unknown> }, fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof SvcError && e.code === "rate_limited" && typeof e.extra.retry_after_seconds === "number") {
      set.headers["retry-after"] = String(e.extra.retry_after_seconds);
    }
    throw e;
  }
}

// ── client IP ──────────────────────────────────────────────────────────────────────────

const socketIps = new WeakMap<Request, string>();

/** Records each request's socket peer address (onRequest runs for every route, the console's too). */
export function clientIpPlugin() {
  return new Elysia({ name: "client-ip" }).onRequest(({ request, server }) => {
    const address = server?.requestIP(request)?.address;
    if (address) socketIps.set(request, address);
  });
}

/**
 * The client's IP: the socket peer, or the last X-Forwarded-For entry when the operator trusts a
 * proxy in front. Null when unknown (in-process requests in tests): IP limits then do not apply.
 */
export function clientIp(deps: ControlPlaneDeps, request: Request): string | null {
  // The console's in-process calls carry the browser's address (request-gate.ts carryOrigin).
  const carried = carriedOrigin(request);
  if (carried) return carried.ip;
  if (deps.config.trustForwardedFor) {
    const xff = request.headers.get("x-forwarded-for");
    const last = xff
      ?.split(",")
      .map((s) => s.trim())
      .filter(Boolean)
      .pop();
    if (last) return last.toLowerCase();
  }
  return socketIps.get(request) ?? peerOf(request) ?? null;
}

/** Longest user agent the admin trail keeps. */
const USER_AGENT_MAX = 300;

/** The client's address and user agent (the console's in-process calls: the browser's). */
export function requestOrigin(deps: ControlPlaneDeps, request: Request): RequestOrigin {
  const carried = carriedOrigin(request);
  if (carried) return carried;
  return { ip: clientIp(deps, request), userAgent: request.headers.get("user-agent")?.slice(0, USER_AGENT_MAX) ?? null };
}
