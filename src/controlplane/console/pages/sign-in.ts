// Sign-in (password and per-organization single sign-on), sign-out and switching between the
// organizations an account belongs to. A password session may switch among the account's
// organizations; a single sign-on session is bound to the organization whose provider vouched
// for it, so switching away from it means signing in again (`sessionAuthenticatedFor`).
// The single sign-on callback also finishes flows started on a claim link's page: those redeem
// the link (claim.ts `finishClaimSso`) and open no session.
import { SvcError } from "../../../contract/errors.ts";
import { membership, sessionAuthenticatedFor } from "../../auth/service.ts";
import { deleteSession, signIn } from "../../auth/sessions.ts";
import { requestOrigin } from "../../http/rate-limit.ts";
import { type PageContext, type PageResult, page, redirect, requireSignedIn, safeNext } from "../context.ts";
import { clearCookie } from "../cookies.ts";
import { html, query } from "../html.ts";
import { publicShell } from "../layout.ts";
import { SsoError, ssoMember, verifySso } from "../oidc.ts";
import { openSession, sessionCookie, signOut } from "../session.ts";
import { finishClaimSso } from "./claim.ts";
import { passwordForm, ssoForm } from "./sign-in-forms.ts";
import { flowCookieName, startSsoRedirect } from "./sso-flow.ts";

const NOTICES: Record<string, string> = {
  "signed-out": "You are signed out.",
  fresh: "Approving an escrow recovery needs a sign-in within the last 5 minutes: sign in again, then approve.",
  reauth: "You signed in through another organization's single sign-on, which does not open this organization. Sign in again with your password or this organization's single sign-on.",
};

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
    const { raw } = await signIn(ctx.deps, { email, password: ctx.form.password ?? "", ...(orgId ? { organizationId: orgId } : {}), origin: requestOrigin(ctx.deps, ctx.request) });
    if (ctx.session) await deleteSession(ctx.deps.db, ctx.session.raw);
    ctx.cookies.push(sessionCookie(ctx.deps, raw));
    return redirect(safeNext(ctx.form.next));
  } catch (e) {
    if (e instanceof SvcError) return signInPage(ctx, { error: e.message, email, status: e.status });
    throw e;
  }
}

export async function postSignOut(ctx: PageContext): Promise<PageResult> {
  ctx.cookies.push(await signOut(ctx.deps, ctx.session?.raw, requestOrigin(ctx.deps, ctx.request)));
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
  const opened = await openSession(ctx.deps, s.principal.accountId, target, "password", requestOrigin(ctx.deps, ctx.request), {
    replaces: s.raw,
    switchedFrom: s.principal.orgId,
    authenticatedAt: s.principal.authenticatedAt ?? null,
    idp: s.principal.idp ?? null,
  });
  if (!opened) return redirect("/");
  ctx.cookies.push(opened.cookie);
  return redirect("/");
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
    return await startSsoRedirect(ctx, orgId, next);
  } catch (e) {
    if (e instanceof SsoError) return ssoFailed(ctx, e.message, 400, next);
    throw e;
  }
}

export async function getSsoCallback(ctx: PageContext, cookies: Record<string, string>): Promise<PageResult> {
  ctx.cookies.push(clearCookie(flowCookieName(ctx), { secure: ctx.deps.config.secureCookies }));
  try {
    const identity = await verifySso(ctx.deps, cookies[flowCookieName(ctx)], ctx.url.searchParams);
    // Started from a claim link's page: redeem it; no session is opened.
    if (identity.claim) return await finishClaimSso(ctx, identity);
    const result = await ssoMember(ctx.deps, identity);
    // Bound to the organization whose provider vouched for the email, and to no other.
    const opened = await openSession(ctx.deps, result.accountId, result.orgId, "sso", requestOrigin(ctx.deps, ctx.request), {
      replaces: ctx.session?.raw,
      authenticatedAt: result.authenticatedAt,
      idp: result.idp,
    });
    if (!opened) return ssoFailed(ctx, `${result.email} is not a member of this organization, or is an owner (owners sign in with their password)`, 403);
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
