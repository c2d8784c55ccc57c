// The claim-link page (spec §3): a front-end user opens the one-time link, signs in with a
// password or single sign-on, and (chatui, their front-end user id) is linked to the service
// user with their email. Used, expired and unknown links are explained. Linking while already
// signed in needs an explicit button press, so a link sent by someone else cannot silently
// attach their chat account to the victim's service user. The name and email the front end
// reported are not verified (Open WebUI lets users pick them), so the page neither shows them
// as the reader's identity nor pre-fills the email with them, and it warns against links the
// reader did not just ask for.
//
// Organization binding: the link belongs to the claim's organization, and it is redeemed only
// by a session authenticated for that organization (`sessionAuthenticatedFor`): a password
// session of the account, or a single sign-on session of that same organization. A single
// sign-on session of another organization (whose admins control their provider) does not count.
//
// Chat users without a console account (service users, often created by directory sync) use
// the claim organization's single sign-on from this page: a POST (with the pre-session CSRF
// token, so another site cannot start it) starts a flow that carries the link; at the callback
// the provider's verified email redeems it (claims/service.ts `redeemClaimByVerifiedEmail`).
// No console session is opened and no account or membership is created.
//
// Chat users without a console account in organizations without single sign-on use a chat
// password an admin's invitation let them set (`svc users invite`, pages/invite.ts): the
// "Link with your chat password" form redeems the link for that service user alone, again
// without a console session. The page says what to do when none of these applies.
import { requestOrigin } from "../../http/rate-limit.ts";
import { SvcError } from "../../../contract/errors.ts";
import { findAccountByEmail, sessionAuthenticatedFor } from "../../auth/service.ts";
import { deleteSession, signIn } from "../../auth/sessions.ts";
import { type ClaimInfo, inspectClaim, redeemClaim, redeemClaimByVerifiedEmail, redeemClaimWithChatPassword } from "../../claims/service.ts";
import { SsoError, type SsoIdentity, getOidcSettings } from "../oidc.ts";
import { type PageContext, type PageResult, page } from "../context.ts";
import { csrfMatches } from "../csrf.ts";
import { type SafeHtml, html, path } from "../html.ts";
import { code, csrfInput, field, publicShell, time } from "../layout.ts";
import { sessionCookie } from "../session.ts";
import { passwordForm } from "./sign-in-forms.ts";
import { startSsoRedirect } from "./sso-flow.ts";
import { type LinkRefusal, inspectLink, isPage, orgName, refusedLink } from "./one-time-link.ts";

const REFUSAL: LinkRefusal = {
  titles: {
    claim_used: "This link was already used",
    claim_expired: "This link has expired",
    not_found: "This link is not valid",
    forbidden: "This link cannot be used",
  },
  fallback: "This link cannot be used",
  body: html`<p>Claim links work once and for a short time. If your chat account is still not linked, go back to the chat and use the tool again: the assistant will send you a new link.</p>`,
};

/** Whether the signed-in session may redeem a link of the claim's organization. */
async function sessionCountsFor(ctx: PageContext, info: ClaimInfo): Promise<boolean> {
  return !!ctx.session && (await sessionAuthenticatedFor(ctx.deps.db, ctx.session.principal, info.orgId));
}

async function claimPage(ctx: PageContext, token: string, info: ClaimInfo, o: { error?: string; email?: string; chatEmail?: string; status?: number } = {}): Promise<PageResult> {
  const action = path`/claim/${token}`;
  const s = ctx.session;
  const signedInHere = s && (await sessionCountsFor(ctx, info));
  const intro = html`<p>This link connects the chat account that asked for it (chat user ${code(info.remoteUserId)}) to your account in <strong>${await orgName(ctx, info.orgId)}</strong>, so the assistant's tools run under your own identity.</p>
<div class="banner banner-warn" role="note"><strong>Use this link only if you asked for it in the chat just now.</strong> Whoever uses that chat account will act as you. If someone sent you this link, or you did not just ask the assistant for it, close this page.</div>
<p class="hint">The link works once and expires ${time(new Date(info.expiresAt).toISOString())}.</p>`;
  const body = signedInHere
    ? html`${intro}
<form method="post" action="${action}" class="stack">
  ${csrfInput(s.csrfToken)}
  <input type="hidden" name="action" value="link">
  <p>You are signed in as <strong>${s.principal.email}</strong>.</p>
  <button type="submit" class="btn btn-block">Link my chat account to ${s.principal.email}</button>
</form>
<form method="post" action="/sign-out" class="actions">${csrfInput(s.csrfToken)}<button type="submit" class="btn btn-ghost btn-small">Not you? Sign out</button></form>`
    : html`${intro}
${s ? html`<p>You are signed in as <strong>${s.principal.email}</strong> through single sign-on of another organization, which does not count here.</p>` : ""}
<p>Sign in to link it.</p>
${passwordForm({ action, csrf: ctx.presession, email: o.email ?? null, submit: "Sign in and link", hidden: html`<input type="hidden" name="action" value="password">` })}
${(await getOidcSettings(ctx.deps, info.orgId)) ? html`<div class="divider">or</div>${claimSsoForm(ctx, action, await orgName(ctx, info.orgId))}` : ""}
<div class="divider">or</div>
${chatPasswordForm(ctx, action, o.chatEmail ?? null)}`;
  return page(publicShell({ title: "Link your chat account", error: o.error ?? null, body, wide: true }), o.status ?? 200);
}

/** For chat users an admin invited (svc users invite): their chat password, no console session. */
function chatPasswordForm(ctx: PageContext, action: string, email: string | null): SafeHtml {
  return html`<form method="post" action="${action}" class="stack" aria-label="Link with your chat password">
  ${csrfInput(ctx.presession)}
  <input type="hidden" name="action" value="chat-password">
  <p><strong>No console account?</strong> If an admin invited you to set a chat password, use it here. It links this chat account only and opens no console access.</p>
  ${field({ label: "Email you were invited with", name: "email", id: "f-chat-email", type: "email", value: email ?? "", required: true, autocomplete: "username" })}
  ${field({ label: "Chat password", name: "password", id: "f-chat-password", type: "password", required: true, autocomplete: "current-password" })}
  <button type="submit" class="btn btn-secondary btn-block">Link with your chat password</button>
  <p class="hint">No console account, no single sign-on and no invitation? Ask an admin of your organization to invite you (<code>svc users invite &lt;your email&gt;</code>); you get a link to set a chat password. Then ask the assistant again for a new link.</p>
</form>`;
}

/** Single sign-on for this link: a POST (pre-session CSRF token) so only this page starts it. */
function claimSsoForm(ctx: PageContext, action: string, org: string): SafeHtml {
  return html`<form method="post" action="${action}" class="stack" aria-label="Single sign-on">
  ${csrfInput(ctx.presession)}
  <input type="hidden" name="action" value="sso">
  <button type="submit" class="btn btn-secondary btn-block">Continue with ${org} single sign-on</button>
  <p class="hint">No console account? Single sign-on links the chat account to the user with your verified email in ${org}; it does not sign you in to the console.</p>
</form>`;
}

async function linked(ctx: PageContext, result: { email: string; remoteUserId: string; orgId: string }): Promise<PageResult> {
  return page(
    publicShell({
      title: "Your chat account is linked",
      notice: `Linked to ${result.email} in ${await orgName(ctx, result.orgId)}.`,
      body: html`<p>Chat user ${code(result.remoteUserId)} now acts as <strong>${result.email}</strong>. Go back to the chat and ask again; your requests are decided under your own account from now on.</p>`,
    }),
  );
}

async function inspect(ctx: PageContext, token: string): Promise<ClaimInfo | PageResult> {
  return inspectLink(REFUSAL, async () => inspectClaim(ctx.deps, token));
}

export async function getClaim(ctx: PageContext): Promise<PageResult> {
  const token = ctx.params.token ?? "";
  const info = await inspect(ctx, token);
  if (isPage(info)) return info;
  return claimPage(ctx, token, info);
}

export async function postClaim(ctx: PageContext): Promise<PageResult> {
  const token = ctx.params.token ?? "";
  const info = await inspect(ctx, token);
  if (isPage(info)) return info;
  let email: string;
  if (ctx.form.action === "sso") {
    if (!csrfMatches(ctx.presession, ctx.form._csrf)) return claimPage(ctx, token, info, { error: "this form expired; press the button again", status: 403 });
    try {
      return await startSsoRedirect(ctx, info.orgId, path`/claim/${token}`, { claim: token });
    } catch (e) {
      if (e instanceof SsoError) return claimPage(ctx, token, info, { error: e.message, status: 400 });
      throw e;
    }
  }
  if (ctx.form.action === "chat-password") {
    if (!csrfMatches(ctx.presession, ctx.form._csrf)) return claimPage(ctx, token, info, { error: "this form expired; sign in again", status: 403 });
    const typed = (ctx.form.email ?? "").trim();
    try {
      const result = await redeemClaimWithChatPassword(ctx.deps, token, { email: typed, password: ctx.form.password ?? "", origin: requestOrigin(ctx.deps, ctx.request) });
      ctx.deps.log.info("claim link redeemed", { org: result.orgId, user: result.userId, via: "chat_password" });
      return await linked(ctx, result);
    } catch (e) {
      if (!(e instanceof SvcError)) throw e;
      if (e.code === "claim_used" || e.code === "claim_expired") return refusedLink(REFUSAL, e);
      return claimPage(ctx, token, info, { error: e.message, chatEmail: typed, status: e.status });
    }
  }
  if (ctx.form.action === "link") {
    const s = ctx.session;
    if (!s || !csrfMatches(s.csrfToken, ctx.form._csrf)) return claimPage(ctx, token, info, { error: "this form expired; press the button again", status: 403 });
    if (!(await sessionCountsFor(ctx, info))) {
      ctx.deps.log.warn("claim link refused: session not authenticated for the claim's organization", { org: info.orgId, sessionOrg: s.principal.orgId, account: s.principal.accountId });
      return claimPage(ctx, token, info, {
        error: `${s.principal.email} is not signed in for this organization: sign in with your password or this organization's single sign-on`,
        status: 403,
      });
    }
    email = s.principal.email;
  } else {
    if (!csrfMatches(ctx.presession, ctx.form._csrf)) return claimPage(ctx, token, info, { error: "this form expired; sign in again", status: 403 });
    const typed = (ctx.form.email ?? "").trim();
    try {
      const { raw } = await signIn(ctx.deps, { email: typed, password: ctx.form.password ?? "", organizationId: info.orgId, origin: requestOrigin(ctx.deps, ctx.request) });
      if (ctx.session) await deleteSession(ctx.deps.db, ctx.session.raw);
      ctx.cookies.push(sessionCookie(ctx.deps, raw));
    } catch (e) {
      if (e instanceof SvcError) return claimPage(ctx, token, info, { error: e.message, email: typed, status: e.status });
      throw e;
    }
    email = typed.toLowerCase();
  }
  try {
    const account = await findAccountByEmail(ctx.deps.db, email);
    const result = await redeemClaim(ctx.deps, token, { email, displayName: account?.displayName ?? null, origin: requestOrigin(ctx.deps, ctx.request) });
    ctx.deps.log.info("claim link redeemed", { org: result.orgId, user: result.userId });
    return linked(ctx, result);
  } catch (e) {
    if (e instanceof SvcError) return refusedLink(REFUSAL, e);
    throw e;
  }
}

/**
 * The single sign-on callback of a flow started on this page: the provider verified `email`
 * for the link's organization; redeem the link for it. Refusals (not a user here, an owner's
 * email, a disabled user, another organization) are shown on the link's page while it is
 * still usable.
 */
export async function finishClaimSso(ctx: PageContext, identity: SsoIdentity): Promise<PageResult> {
  const token = identity.claim ?? "";
  const info = await inspect(ctx, token);
  if (isPage(info)) return info;
  try {
    const result = await redeemClaimByVerifiedEmail(ctx.deps, token, { orgId: identity.orgId, email: identity.email, origin: requestOrigin(ctx.deps, ctx.request) });
    ctx.deps.log.info("claim link redeemed", { org: result.orgId, user: result.userId, via: "sso" });
    return linked(ctx, result);
  } catch (e) {
    if (!(e instanceof SvcError)) throw e;
    ctx.deps.log.warn("claim link refused after single sign-on", { org: info.orgId, code: e.code });
    if (e.code === "claim_used" || e.code === "claim_expired") return refusedLink(REFUSAL, e);
    return claimPage(ctx, token, info, { error: e.message, status: e.status });
  }
}
