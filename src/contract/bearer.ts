// Bearer-token helpers shared by the control plane (runtime and admin auth) and the proxy's
// local API: parse `Authorization: Bearer <token>` and compare secrets in constant time.
import { createHash, timingSafeEqual } from "node:crypto";

/** The token of an `Authorization: Bearer <token>` header; null when absent or malformed. */
export function bearer(header: string | undefined | null): string | null {
  if (!header) return null;
  const m = /^Bearer\s+(\S+)$/i.exec(header);
  return m ? m[1]! : null;
}

const digest = (s: string) => createHash("sha256").update(s).digest();

/** Constant-time equality of two secrets; comparing digests hides the length as well. */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

/** safeEqual against one fixed secret, its digest computed once (a check on every request). */
export function secretMatcher(secret: string): (given: string) => boolean {
  const want = digest(secret);
  return (given) => timingSafeEqual(digest(given), want);
}
