// Per-route authentication as Elysia macros:
//   { admin: true }   an owner or admin of the path's organization (API token or session)
//   { member: true }  any member of the path's organization
//   { runtime: true } an installation's runtime token (runtime API only)
// A token of another organization gets 404 for the path's organization: existence is not leaked.
// Cookie-authenticated writes must carry the session's CSRF token in `x-csrf-token`.
import { Elysia } from "elysia";
import { SvcError } from "../../contract/errors.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { cookieName } from "../http/cookie-names.ts";
import { requestOrigin } from "../http/rate-limit.ts";
import { credentialOf, receivedRequest } from "../http/request-gate.ts";
import { deletedInstallationOf, findInstallationByToken, type RuntimeCaller } from "../installations/runtime-auth.ts";
import { type Principal, principalFromSession, principalFromToken, requireAdmin } from "./service.ts";
import { bearer, safeEqual } from "./tokens.ts";

/** The session cookie's base name; `__Host-svc_session` with Secure cookies (sessionCookieName). */
export const SESSION_COOKIE = "svc_session";
export const CSRF_HEADER = "x-csrf-token";

export function sessionCookieName(config: Pick<ControlPlaneDeps["config"], "secureCookies">): string {
  return cookieName(SESSION_COOKIE, config.secureCookies);
}

type Ctx = { headers: Record<string, string | undefined>; params: unknown; request: Request; cookie: Record<string, { value?: unknown }> };

const identified = new WeakMap<Request, Principal>();

/**
 * Who a request proved to be, even when it was then refused (a member on an admin route, a
 * session write without its CSRF token): the admin trail's refusal hook names them
 * (audit/refusals.ts). The console marks its signed-in pages' requests the same way.
 */
export function identifiedPrincipal(request: Request): Principal | undefined {
  return identified.get(request);
}

export function markIdentified(request: Request, principal: Principal): void {
  identified.set(receivedRequest(request), principal);
}

export async function resolvePrincipal(deps: ControlPlaneDeps, ctx: Ctx): Promise<Principal> {
  // The request gate checked this request's credential before reading its body.
  const checked = credentialOf(ctx.request) as Principal | undefined;
  if (checked) return checked;
  const token = bearer(ctx.headers.authorization);
  let p: Principal | null = null;
  if (token) {
    // A CLI names its release in its user agent; kept with the token's last use (issue 29: skew).
    const agent = ctx.headers["user-agent"];
    p = await principalFromToken(deps, token, agent?.startsWith("svc-cli/") ? agent : null);
  } else {
    const raw = ctx.cookie[sessionCookieName(deps.config)]?.value;
    if (typeof raw === "string" && raw) {
      p = await principalFromSession(deps, raw);
      if (p && ctx.request.method !== "GET" && ctx.request.method !== "HEAD") {
        const sent = ctx.headers[CSRF_HEADER] ?? "";
        if (!p.csrfToken || !safeEqual(sent, p.csrfToken)) {
          // The cookie proved who it is; the write came without its token (maybe another site's).
          markIdentified(ctx.request, { ...p, ...requestOrigin(deps, ctx.request) });
          throw new SvcError("forbidden", "missing or wrong CSRF token; reload the page and try again");
        }
      }
    }
  }
  if (!p) throw new SvcError("unauthorized", "sign in first: run `svc login` or sign in to the console");
  const org = (ctx.params as { org?: string } | undefined)?.org;
  if (org !== undefined && org !== p.orgId) throw new SvcError("not_found", `organization ${org} not found`);
  // Who asked, from where: the admin trail names it with every change (audit/admin-events.ts).
  const principal = { ...p, ...requestOrigin(deps, ctx.request) };
  markIdentified(ctx.request, principal);
  return principal;
}

export async function runtimeCaller(deps: ControlPlaneDeps, headers: Record<string, string | undefined>): Promise<RuntimeCaller> {
  const token = bearer(headers.authorization);
  const caller: RuntimeCaller | null = token ? await findInstallationByToken(deps, token, headers) : null;
  if (caller) return caller;
  const deleted = token ? await deletedInstallationOf(deps, token) : null;
  if (deleted) {
    throw new SvcError(
      "installation_deleted",
      `the runtime token belongs to installation ${deleted.id} (${deleted.name}), which was deleted at ${new Date(deleted.deletedAt).toISOString()}; a deleted installation's credential cannot be rotated: create an installation with \`svc bot init\`, get its credential with \`svc bot credential\` and deploy with that`,
    );
  }
  throw new SvcError("unauthorized", "runtime token is wrong or was rotated; get a new one with `svc bot credential --rotate`");
}

/** Headers of a request as Elysia's context holds them (lower-case name → value). */
function headersOf(request: Request): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  request.headers.forEach((value, name) => {
    out[name] = value;
  });
  return out;
}

/** Cookies of a request as Elysia's context holds them (name → { value }). */
function cookiesOf(request: Request): Ctx["cookie"] {
  const out: Ctx["cookie"] = {};
  for (const part of (request.headers.get("cookie") ?? "").split(";")) {
    const at = part.indexOf("=");
    if (at <= 0) continue;
    const raw = part.slice(at + 1).trim();
    let value = raw;
    try {
      value = decodeURIComponent(raw);
    } catch {}
    out[part.slice(0, at).trim()] = { value };
  }
  return out;
}

/**
 * The request gate's checks (http/request-gate.ts), from the headers alone: an owner or admin
 * of the path's organization, or an installation's runtime token. What they resolve is handed
 * to the route's macro with the request.
 */
export const gateChecks = {
  async admin(deps: ControlPlaneDeps, request: Request, org: string | undefined): Promise<Principal> {
    const headers = headersOf(request);
    const principal = await resolvePrincipal(deps, { headers, params: org === undefined ? {} : { org }, request, cookie: cookiesOf(request) });
    requireAdmin(principal);
    return principal;
  },
  async runtime(deps: ControlPlaneDeps, request: Request): Promise<RuntimeCaller> {
    return runtimeCaller(deps, headersOf(request));
  },
};

const cache = new WeakMap<ControlPlaneDeps, ReturnType<typeof build>>();

function build(deps: ControlPlaneDeps) {
  return new Elysia({ name: "svc-auth" }).macro({
    admin: {
      async resolve(ctx) {
        const principal = await resolvePrincipal(deps, ctx as unknown as Ctx);
        requireAdmin(principal);
        return { principal };
      },
    },
    member: {
      async resolve(ctx) {
        return { principal: await resolvePrincipal(deps, ctx as unknown as Ctx) };
      },
    },
    runtime: {
      async resolve({ headers, request }) {
        return { runtime: (credentialOf(request) as RuntimeCaller | undefined) ?? (await runtimeCaller(deps, headers)) };
      },
    },
  });
}

export function authPlugin(deps: ControlPlaneDeps) {
  let p = cache.get(deps);
  if (!p) {
    p = build(deps);
    cache.set(deps, p);
  }
  return p;
}
