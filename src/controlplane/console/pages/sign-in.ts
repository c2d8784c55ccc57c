// Sign-in (password and per-organization single sign-on), sign-out and switching between the
// organizations an account belongs to. A password session may switch among the account's
// organizations; a single sign-on session is bound to the organization whose provider vouched
// for it, so switching away from it means signing in again (`sessionAuthenticatedFor`).
import { SvcError } from "../../../contract/errors.ts";
import { membership, sessionAuthenticatedFor } from "../../auth/service.ts";
import { signIn } from "../../auth/sessions.ts";
import { clientIp } from "../../http/rate-limit.ts";
import { getOrganization } from "../../organizations/service.ts";
import { type PageContext, type PageResult, page, redirect, requireSignedIn, safeNext } from "../context.ts";
import { cookieName } from "../../http/cookie-names.ts";
import { clearCookie, serializeCookie } from "../cookies.ts";
import { type SafeHtml, html, query } from "../html.ts";
import { csrfInput, field, publicShell } from "../layout.ts";
import { FLOW_COOKIE, FLOW_TTL_SECONDS, SsoError, finishSso, getOidcSettings, startSso } from "../oidc.ts";
import { openSession, sessionCookie, signOut } from "../session.ts";

const NOTICES: Record<string, string> = {
  "signed-out": "You are signed out.",
  reauth:
    "You signed in through another organization's single sign-on, which does not open this organization. Sign in again with your password or this organization's single sign-on.",
};

/** The email and password form, shared by the sign-in and claim pages. */
export function passwordForm(o: { action: string; csrf: string; next?: string; orgId?: string | null; email?: string | null; submit: string; hidden?: SafeHtml }): SafeHtml {
  return html`<form method="post" action="${o.action}" class="stack" aria-label="Sign in with password">
  ${csrfInput(o.csrf)}
  ${o.next ? html`<input type="hidden" name="next" value="${o.next}">` : ""}
  ${o.orgId ? html`<input type="hidden" name="organization_id" value="${o.orgId}">` : ""}
  ${o.hidden ?? ""}
  ${field({ label: "Email", name: "email", type: "email", value: o.email ?? "", required: true, autocomplete: "username" })}
  ${field({ label: "Password", name: "password", type: "password", required: true, autocomplete: "current-password" })}
  <button type="submit" class="btn btn-block">${o.submit}</button>
</form>`;
}

/** Single sign-on: a button when the organization is known and configured, else a field for its id. */
export async function ssoForm(ctx: PageContext, o: { orgId?: string | null; next?: string }): Promise<SafeHtml> {
  const configured = o.orgId ? await getOidcSettings(ctx.deps, o.orgId) : null;
  if (o.orgId && configured) {
    let orgName = o.orgId;
    try {
      orgName = (await getOrganization(ctx.deps.db, o.orgId)).name;
    } catch {}
    return html`<form method="get" action="/sso/start" aria-label="Single sign-on">
  <input type="hidden" name="org" value="${o.orgId}">
  ${o.next ? html`<input type="hidden" name="next" value="${o.next}">` : ""}
  <button type="submit" class="btn btn-secondary btn-block">Continue with ${orgName} single sign-on</button>
</form>`;
  }
  return html`<form method="get" action="/sso/start" class="stack" aria-label="Single sign-on">
  ${o.next ? html`<input type="hidden" name="next" value="${o.next}">` : ""}
  ${field({
    label: "Organization ID",
    name: "org",
    id: "sso-org",
    required: true,
    value: o.orgId ?? "",
    placeholder: "org_…",
    hint: "Your admin can give you a direct single sign-on link instead.",
  })}
  <button type="submit" class="btn btn-secondary btn-block">Continue with single sign-on</button>
</form>`;
}

async function signInPage(ctx: PageContext, o: { error?: string | null; email?: string | null; status?: number }): Promise<PageResult> {
  const next = safeNext(ctx.form.next ?? ctx.url.searchParams.get("next"));
  const orgId = ctx.form.organization_id ?? ctx.url.searchParams.get("org");
  const done = ctx.url.searchParams.get("done");
  return page(
    publicShell({
      title: "Sign in",
      error: o.error ?? null,
      notice: done ? (NOTICES[done] ?? null) : null,
      body: html`${passwordForm({ action: "/sign-in", csrf: ctx.presession, next, orgId, email: o.email ?? null, submit: "Sign in" })}
<div class="divider">or</div>
${await ssoForm(ctx, { orgId, next })}`,
    }),
    o.status ?? 200,
  );
}

export async function getSignIn(ctx: PageContext): Promise<PageResult> {
  if (ctx.session && !ctx.url.searchParams.get("org")) return redirect(safeNext(ctx.url.searchParams.get("next")));
  return signInPage(ctx, {});
}

export async function postSignIn(ctx: PageContext): Promise<PageResult> {
  const email = (ctx.form.email ?? "").trim();
  const orgId = ctx.form.organization_id || undefined;
  try {
    const { raw } = await signIn(ctx.deps, { email, password: ctx.form.password ?? "", ...(orgId ? { organizationId: orgId } : {}), clientIp: clientIp(ctx.deps, ctx.request) });
    if (ctx.session) await signOut(ctx.deps, ctx.session.raw);
    ctx.cookies.push(sessionCookie(ctx.deps, raw));
    return redirect(safeNext(ctx.form.next));
  } catch (e) {
    if (e instanceof SvcError) return signInPage(ctx, { error: e.message, email, status: e.status });
    throw e;
  }
}

export async function postSignOut(ctx: PageContext): Promise<PageResult> {
  ctx.cookies.push(await signOut(ctx.deps, ctx.session?.raw));
  return redirect("/sign-in?done=signed-out");
}

export async function postSwitchOrg(ctx: PageContext): Promise<PageResult> {
  const s = requireSignedIn(ctx).session;
  const target = ctx.form.organization_id ?? "";
  if (target === s.principal.orgId) return redirect("/");
  if (!(await membership(ctx.deps.db, s.principal.accountId, target))) return redirect("/");
  if (!(await sessionAuthenticatedFor(ctx.deps.db, s.principal, target))) {
    // A single sign-on session vouches only for its own organization: sign in again there.
    ctx.deps.log.info("console switch-org needs sign-in", { from: s.principal.orgId, to: target, account: s.principal.accountId });
    return redirect(`/sign-in${query({ org: target, done: "reauth" })}`);
  }
  // The new session replaces the old one in the same transaction.
  const opened = await openSession(ctx.deps, s.principal.accountId, target, "password", { replaces: s.raw });
  if (!opened) return redirect("/");
  ctx.cookies.push(opened.cookie);
  return redirect("/");
}

/** `__Host-` cookies must have Path=/, so the flow cookie is sent site-wide (it is sealed and short-lived). */
function flowCookieName(ctx: PageContext): string {
  return cookieName(FLOW_COOKIE, ctx.deps.config.secureCookies);
}

function ssoFailed(ctx: PageContext, message: string, status: number, next?: string): PageResult {
  return page(
    publicShell({
      title: "Single sign-on did not complete",
      error: message,
      body: html`<p><a class="btn btn-secondary" href="/sign-in${query({ next: next && next !== "/" ? next : null })}">Back to sign-in</a></p>`,
    }),
    status,
  );
}

export async function getSsoStart(ctx: PageContext): Promise<PageResult> {
  const orgId = (ctx.url.searchParams.get("org") ?? "").trim();
  const next = safeNext(ctx.url.searchParams.get("next"));
  if (!orgId) return ssoFailed(ctx, "enter your organization ID to use single sign-on", 400, next);
  try {
    const { location, flow } = await startSso(ctx.deps, orgId, next);
    ctx.cookies.push(serializeCookie(flowCookieName(ctx), flow, { secure: ctx.deps.config.secureCookies, maxAgeSeconds: FLOW_TTL_SECONDS }));
    return redirect(location);
  } catch (e) {
    if (e instanceof SsoError) return ssoFailed(ctx, e.message, 400, next);
    throw e;
  }
}

export async function getSsoCallback(ctx: PageContext, cookies: Record<string, string>): Promise<PageResult> {
  ctx.cookies.push(clearCookie(flowCookieName(ctx), { secure: ctx.deps.config.secureCookies }));
  try {
    const result = await finishSso(ctx.deps, cookies[flowCookieName(ctx)], ctx.url.searchParams);
    // Bound to the organization whose provider vouched for the email, and to no other.
    const opened = await openSession(ctx.deps, result.accountId, result.orgId, "sso", { replaces: ctx.session?.raw });
    if (!opened) return ssoFailed(ctx, `${result.email} is not a member of this organization`, 403);
    ctx.cookies.push(opened.cookie);
    ctx.deps.log.info("console sso sign-in", { org: result.orgId, account: result.accountId });
    return redirect(safeNext(result.next));
  } catch (e) {
    if (e instanceof SsoError) {
      ctx.deps.log.warn("console sso refused", { reason: e.message });
      return ssoFailed(ctx, e.message, 400);
    }
    throw e;
  }
}
