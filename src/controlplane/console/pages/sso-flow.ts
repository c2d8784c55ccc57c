// Starting a single sign-on flow from a console page: the provider's authorization URL, and the
// sealed flow cookie (`__Host-svc_oidc` on https; `__Host-` cookies must have Path=/, so it is
// sent site-wide, which is harmless: it is sealed by the KMS and lives 10 minutes).
import { cookieName } from "../../http/cookie-names.ts";
import { type PageContext, type PageResult, redirect } from "../context.ts";
import { serializeCookie } from "../cookies.ts";
import { FLOW_COOKIE, FLOW_TTL_SECONDS, startSso } from "../oidc.ts";

export function flowCookieName(ctx: PageContext): string {
  return cookieName(FLOW_COOKIE, ctx.deps.config.secureCookies);
}

/** Redirects to the provider; `claim` makes the flow redeem that claim link at the callback. Throws SsoError. */
export async function startSsoRedirect(ctx: PageContext, orgId: string, next: string, opts: { claim?: string } = {}): Promise<PageResult> {
  const { location, flow } = await startSso(ctx.deps, orgId, next, opts);
  ctx.cookies.push(serializeCookie(flowCookieName(ctx), flow, { secure: ctx.deps.config.secureCookies, maxAgeSeconds: FLOW_TTL_SECONDS }));
  return redirect(location);
}
