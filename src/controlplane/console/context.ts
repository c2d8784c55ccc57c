// What every console page handler gets (the request, the signed-in session if any, the
// in-process API client) and what it returns (a page or a redirect). Access rules live here:
// pages that need a signed-in owner/admin call `requireAdmin`, which redirects to sign-in or
// answers 403 for members, before any API call is made (the API enforces roles again).
import { sessionCookieName } from "../auth/plugin.ts";
import type { Principal } from "../auth/service.ts";
import { type Acting, actorOf } from "../audit/admin-events.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { requestOrigin } from "../http/rate-limit.ts";
import { type ApiHandle, ConsoleApi } from "./api-client.ts";
import type { SafeHtml } from "./html.ts";

export type ConsoleSession = { raw: string; principal: Principal; csrfToken: string; orgName: string; orgs: Array<{ orgId: string; name: string; role: string }> };

export type PageContext = {
  deps: ControlPlaneDeps;
  handle: ApiHandle;
  request: Request;
  url: URL;
  params: Record<string, string>;
  form: Record<string, string>;
  session: ConsoleSession | null;
  /** The pre-session double-submit CSRF token (cookie `svc_form`). */
  presession: string;
  /** Set-Cookie values to send with the response. */
  cookies: string[];
};

export type PageResult = { kind: "page"; status: number; body: SafeHtml } | { kind: "redirect"; location: string } | { kind: "download"; response: Response };

export function page(body: SafeHtml, status = 200): PageResult {
  return { kind: "page", status, body };
}

export function redirect(location: string): PageResult {
  return { kind: "redirect", location };
}

/** Thrown to stop a handler with a finished result (sign-in redirect, 403 page). */
export class PageExit extends Error {
  constructor(readonly result: PageResult) {
    super("page exit");
  }
}

export type AdminContext = PageContext & { session: ConsoleSession; api: ConsoleApi };

/** Longest post-sign-in target kept; longer ones fall back (no real console path is this long). */
const MAX_NEXT_LENGTH = 2048;
/** Any origin will do: `safeNext` only asks whether a target stays on the origin it is resolved against. */
const NEXT_BASE = "https://console.invalid";

/**
 * Keeps a post-sign-in target on this site: a same-origin absolute path (with query), never
 * `//host`, a full URL, or anything a browser would read as one. Browsers drop tabs and
 * newlines and treat `\` as `/` in URLs, so `/\t/evil` or `/\\evil` would leave the site:
 * control characters, spaces, backslashes and non-ASCII are refused outright (a real target
 * is percent-encoded), then the target must resolve to the base's own origin.
 */
export function safeNext(next: unknown, fallback = "/"): string {
  if (typeof next !== "string" || next.length === 0 || next.length > MAX_NEXT_LENGTH) return fallback;
  if (!next.startsWith("/") || next.startsWith("//")) return fallback;
  if (!/^[\x21-\x7e]+$/.test(next) || next.includes("\\")) return fallback;
  let resolved: URL;
  try {
    resolved = new URL(next, NEXT_BASE);
  } catch {
    return fallback;
  }
  // `/.//evil` stays here as given, but re-serialized its path would start with `//`.
  if (resolved.origin !== NEXT_BASE || resolved.pathname.startsWith("//")) return fallback;
  return next;
}

export function signInRedirect(ctx: PageContext): PageResult {
  const here = ctx.url.pathname + ctx.url.search;
  return redirect(`/sign-in?next=${encodeURIComponent(ctx.request.method === "GET" ? here : ctx.url.pathname)}`);
}

export function requireSignedIn(ctx: PageContext): PageContext & { session: ConsoleSession } {
  if (!ctx.session) throw new PageExit(signInRedirect(ctx));
  return ctx as PageContext & { session: ConsoleSession };
}

/** Role check for admin pages; `forbidden` renders the 403 page (kept in layout.ts). */
export function isAdmin(session: ConsoleSession | null): boolean {
  return !!session && (session.principal.role === "owner" || session.principal.role === "admin");
}

export function apiFor(ctx: PageContext & { session: ConsoleSession }): ConsoleApi {
  return new ConsoleApi(ctx.handle, {
    sessionRaw: ctx.session.raw,
    csrfToken: ctx.session.csrfToken,
    orgId: ctx.session.principal.orgId,
    cookieName: sessionCookieName(ctx.deps.config),
    // The person's address and browser, so the admin trail names them, not this process.
    origin: requestOrigin(ctx.deps, ctx.request),
  });
}

/** Who makes a change the console writes itself (not through the API): the signed-in person, from the browser's address. */
export function consoleActing(ctx: PageContext & { session: ConsoleSession }): Acting {
  const { ip, userAgent } = requestOrigin(ctx.deps, ctx.request);
  return { actor: { ...actorOf(ctx.session.principal), ip, user_agent: userAgent }, at: ctx.deps.now() };
}
