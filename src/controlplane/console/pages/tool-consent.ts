// The consent pages of per-user OAuth to MCP servers (issue 32): the one-time link a chat user
// got (as an MCP URL elicitation, to them alone) shows which tool server and which chat user it
// connects, and a button that sends the browser on to the tool server's authorization server;
// its answer comes back to the callback, which exchanges the code and keeps the tokens
// (tool-oauth/service.ts). Neither page needs a console session: chat users often have none,
// and the link itself (one-time, 15 minutes, hashed at rest) names the user.
//
// Why a page and a button rather than a redirect: whoever signs in at the authorization server
// is bound to the link's user, so a link forwarded to someone else ("click to connect GitHub")
// would give the sender that person's upstream identity. The page names the user the link is
// for and tells anyone else to close it; the callback also refuses a sign-in whose email is not
// that user's when the authorization server reveals one. A GET only shows the page (a link
// previewer or prefetcher does not use the link up); the POST, with the pre-session CSRF token
// (so another site cannot send a browser on with a link), takes the link, and only the browser
// that pressed it (its pre-session cookie) can finish at the callback: the authorization URL,
// forwarded on its own, binds nothing.
import { SvcError } from "../../../contract/errors.ts";
import { type ConsentInfo, finishConsent, inspectConsent, openConsent } from "../../tool-oauth/service.ts";
import { type PageContext, type PageResult, page, redirect } from "../context.ts";
import { html, path } from "../html.ts";
import { csrfInput, publicShell, time } from "../layout.ts";

function refused(e: unknown, ctx: PageContext): PageResult {
  const known = e instanceof SvcError;
  if (!known) ctx.deps.log.error("tool server consent failed", { error: ((e as Error).message ?? String(e)).slice(0, 300) });
  const status = known ? (e.status >= 500 ? 502 : e.status) : 502;
  return page(
    publicShell({
      title: "Connecting the tool did not work",
      error: known ? e.message : "The tool server could not be reached; the control plane log has the details.",
      body: html`<p>Go back to the chat and call the tool again for a new link.</p>`,
    }),
    status,
  );
}

function consentPage(ctx: PageContext, token: string, info: ConsentInfo): PageResult {
  const who = info.user;
  const body = who
    ? html`<p>This link connects the tool server <strong>${info.server}</strong> to the chats of <strong>${who.displayName ?? who.email}</strong> (${who.email}). The account you sign in with at the tool's sign-in page next is the one the tool sees for every call ${who.email} makes.</p>
<div class="banner banner-warn" role="note"><strong>Continue only if you are ${who.email}.</strong> If someone sent you this link, close this page.</div>`
    : html`<p>This link connects the <strong>listing grant</strong> of the tool server <strong>${info.server}</strong>: svc lists the server's tools with it and never calls a tool with it. An admin asked for it.</p>
<div class="banner banner-warn" role="note"><strong>Continue only if you are the admin who asked for this link.</strong> If someone sent you this link, close this page.</div>`;
  return page(
    publicShell({
      title: `Connect ${info.server}`,
      body: html`${body}
<form method="post" action="${path`/oauth/tool-servers/consent/${token}`}" class="stack">
  ${csrfInput(ctx.presession)}
  <button type="submit" class="btn btn-block">Continue to the tool's sign-in</button>
</form>
<p class="hint">The link works once and expires ${time(new Date(info.expiresAt).toISOString())}.</p>`,
    }),
  );
}

export async function getToolConsent(ctx: PageContext): Promise<PageResult> {
  const token = ctx.params.token ?? "";
  try {
    return consentPage(ctx, token, await inspectConsent(ctx.deps, token));
  } catch (e) {
    return refused(e, ctx);
  }
}

/** The person at the browser pressed Continue (the router checked the pre-session CSRF token). */
export async function postToolConsent(ctx: PageContext): Promise<PageResult> {
  try {
    return redirect(await openConsent(ctx.deps, ctx.params.token ?? "", ctx.presession));
  } catch (e) {
    return refused(e, ctx);
  }
}

export async function getToolConsentCallback(ctx: PageContext): Promise<PageResult> {
  const q = ctx.url.searchParams;
  try {
    const done = await finishConsent(ctx.deps, { state: q.get("state") ?? undefined, code: q.get("code") ?? undefined, error: q.get("error") ?? undefined }, ctx.presession);
    return page(
      publicShell({
        title: "Tool connected",
        body: html`<p>svc may now call the tool server <b>${done.server}</b> as <b>${done.subject ?? "you"}</b> for your chats. Go back to the chat and ask again.</p>`,
      }),
    );
  } catch (e) {
    return refused(e, ctx);
  }
}
