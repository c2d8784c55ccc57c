// In-process abuse limits: fixed-window counters keyed by a string (a lower-cased email, a
// client IP), one set per ControlPlaneDeps, on the deps clock. Counters live in memory: a
// restart forgets them, and replicas count separately (each enforces its own limit).
//
// The client IP is the socket's peer address (Bun's server.requestIP), recorded for each
// request by `clientIpPlugin`. X-Forwarded-For is read only when the operator says a trusted
// proxy sits in front (SVC_CP_TRUST_FORWARDED_FOR=1), and then only its last entry: the
// address that proxy saw.
import { Elysia } from "elysia";
import { SvcError } from "../../contract/errors.ts";
import type { ControlPlaneDeps } from "../deps.ts";

/** Keys kept per limiter before expired windows are swept (and, past that, the oldest dropped). */
const MAX_KEYS = 50_000;

export class FixedWindowLimiter {
  readonly #windows = new Map<string, { start: number; count: number }>();
  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  #current(key: string, now: number) {
    const w = this.#windows.get(key);
    if (!w || now - w.start >= this.windowMs) return null;
    return w;
  }

  /** Seconds to wait when the key is at its limit, else 0. */
  blockedFor(key: string, now: number): number {
    const w = this.#current(key, now);
    if (!w || w.count < this.limit) return 0;
    return Math.max(1, Math.ceil((w.start + this.windowMs - now) / 1000));
  }

  /** Counts one event for the key. */
  hit(key: string, now: number): void {
    const w = this.#current(key, now);
    if (w) {
      w.count++;
      return;
    }
    this.#windows.delete(key);
    this.#windows.set(key, { start: now, count: 1 });
    if (this.#windows.size > MAX_KEYS) this.#sweep(now);
  }

  reset(key: string): void {
    this.#windows.delete(key);
  }

  get size(): number {
    return this.#windows.size;
  }

  #sweep(now: number): void {
    for (const [k, w] of this.#windows) if (now - w.start >= this.windowMs) this.#windows.delete(k);
    // Still full of live windows: drop the oldest (insertion order) rather than grow.
    for (const k of this.#windows.keys()) {
      if (this.#windows.size <= MAX_KEYS) break;
      this.#windows.delete(k);
    }
  }
}

export type RateLimitConfig = {
  /** Failed password sign-ins per email within the window. */
  signInFailuresPerEmail: number;
  /** Failed password sign-ins per client IP within the window. */
  signInFailuresPerIp: number;
  signInWindowSeconds: number;
  /** Unauthenticated `svc login` requests created per client IP within the window. */
  loginRequestsPerIp: number;
  loginRequestWindowSeconds: number;
};

export const DEFAULT_RATE_LIMITS: RateLimitConfig = {
  signInFailuresPerEmail: 10,
  signInFailuresPerIp: 50,
  signInWindowSeconds: 15 * 60,
  loginRequestsPerIp: 30,
  loginRequestWindowSeconds: 15 * 60,
};

type Limiters = {
  signInEmail: FixedWindowLimiter;
  signInIp: FixedWindowLimiter;
  loginRequestIp: FixedWindowLimiter;
  /** Login request id → time of its last accepted token poll. */
  lastPoll: Map<string, number>;
};

const perDeps = new WeakMap<ControlPlaneDeps, Limiters>();

export function limiters(deps: ControlPlaneDeps): Limiters {
  let l = perDeps.get(deps);
  if (!l) {
    const c = deps.config.rateLimits;
    l = {
      signInEmail: new FixedWindowLimiter(c.signInFailuresPerEmail, c.signInWindowSeconds * 1000),
      signInIp: new FixedWindowLimiter(c.signInFailuresPerIp, c.signInWindowSeconds * 1000),
      loginRequestIp: new FixedWindowLimiter(c.loginRequestsPerIp, c.loginRequestWindowSeconds * 1000),
      lastPoll: new Map(),
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
  if (deps.config.trustForwardedFor) {
    const xff = request.headers.get("x-forwarded-for");
    const last = xff?.split(",").map((s) => s.trim()).filter(Boolean).pop();
    if (last) return last.toLowerCase();
  }
  return socketIps.get(request) ?? null;
}
