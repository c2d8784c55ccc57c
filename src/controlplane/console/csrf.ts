// CSRF checks for console forms. Signed-in forms carry the session's CSRF token in a hidden
// `_csrf` field; forms shown before a session exists (sign-in, claim sign-in) use a
// double-submit token: a random value in an HttpOnly, SameSite=Lax cookie that the form must
// echo. Comparison is timing-safe; anything missing or not a string fails.
import { randomBytes } from "node:crypto";
import { safeEqual } from "../auth/tokens.ts";
import { cookieName } from "../http/cookie-names.ts";

export const CSRF_FIELD = "_csrf";
/** The pre-session double-submit cookie's base name, scoped to the whole console (`__Host-svc_form` on https). */
export const PRESESSION_COOKIE = "svc_form";

export function presessionCookieName(config: { secureCookies: boolean }): string {
  return cookieName(PRESESSION_COOKIE, config.secureCookies);
}

export function csrfMatches(expected: string | null | undefined, sent: unknown): boolean {
  if (typeof expected !== "string" || expected.length < 16) return false;
  if (typeof sent !== "string" || sent.length === 0) return false;
  return safeEqual(expected, sent);
}

export function newPresessionToken(): string {
  return randomBytes(24).toString("base64url");
}
