// The invitation page (issue 19): a chat user without a console account, invited by an admin
// (`svc users invite <email>`), opens the one-time link and sets a chat password. The password
// opens no console session: it only redeems the claim links the assistant sends this person
// (claim page, "Link with your chat password"). Used, expired and unknown links are explained.
import { clientIp, requestOrigin } from "../../http/rate-limit.ts";
import { SvcError } from "../../../contract/errors.ts";
import { type InviteInfo, MIN_CHAT_PASSWORD, acceptInvite, inspectInvite } from "../../invites/service.ts";
import { type PageContext, type PageResult, page } from "../context.ts";
import { csrfMatches } from "../csrf.ts";
import { html, path } from "../html.ts";
import { csrfInput, field, publicShell, time } from "../layout.ts";
import { type LinkRefusal, inspectLink, isPage, orgName, refusedLink } from "./one-time-link.ts";

const REFUSAL: LinkRefusal = {
  titles: {
    invite_used: "This invitation was already used",
    invite_expired: "This invitation has expired",
    not_found: "This invitation is not valid",
  },
  fallback: "This invitation cannot be used",
  body: html`<p>Invitations work once and for 7 days. Ask an admin of your organization for a new one.</p>`,
};

async function form(ctx: PageContext, token: string, info: InviteInfo, o: { error?: string; status?: number } = {}): Promise<PageResult> {
  const body = html`<p>An admin of <strong>${await orgName(ctx, info.orgId)}</strong> invited <strong>${info.email}</strong> to use the governed chat.</p>
<p>Set a chat password below. You use it only on the link the assistant sends you in the chat, to connect your chat account to ${info.email}. It does not sign you in to the console, and gives no access to it.</p>
<p class="hint">This invitation works once and expires ${time(new Date(info.expiresAt).toISOString())}.</p>
<form method="post" action="${path`/invite/${token}`}" class="stack" aria-label="Set your chat password">
  ${csrfInput(ctx.presession)}
  ${field({ label: "Chat password", name: "password", type: "password", required: true, autocomplete: "new-password", hint: `At least ${MIN_CHAT_PASSWORD} characters.` })}
  ${field({ label: "The same password again", name: "confirm", type: "password", required: true, autocomplete: "new-password" })}
  <button type="submit" class="btn btn-block">Set my chat password</button>
</form>`;
  return page(publicShell({ title: "Set your chat password", error: o.error ?? null, body }), o.status ?? 200);
}

async function inspect(ctx: PageContext, token: string): Promise<InviteInfo | PageResult> {
  return inspectLink(REFUSAL, async () => inspectInvite(ctx.deps, token));
}

export async function getInvite(ctx: PageContext): Promise<PageResult> {
  const token = ctx.params.token ?? "";
  const info = await inspect(ctx, token);
  return isPage(info) ? info : form(ctx, token, info);
}

export async function postInvite(ctx: PageContext): Promise<PageResult> {
  const token = ctx.params.token ?? "";
  const info = await inspect(ctx, token);
  if (isPage(info)) return info;
  if (!csrfMatches(ctx.presession, ctx.form._csrf)) return form(ctx, token, info, { error: "this form expired; type the password again", status: 403 });
  try {
    await acceptInvite(ctx.deps, token, ctx.form.password ?? "", ctx.form.confirm ?? "", requestOrigin(ctx.deps, ctx.request));
  } catch (e) {
    if (!(e instanceof SvcError)) throw e;
    if (e.code === "invite_used" || e.code === "invite_expired") return refusedLink(REFUSAL, e);
    return form(ctx, token, info, { error: e.message, status: e.status });
  }
  ctx.deps.log.info("chat password set through an invitation", { org: info.orgId, user: info.userId, ip: clientIp(ctx.deps, ctx.request) });
  return page(
    publicShell({
      title: "Your chat password is set",
      notice: `Chat password set for ${info.email}.`,
      body: html`<p>Go back to the chat and use a tool. The assistant sends you a one-time link: open it, choose <strong>Link with your chat password</strong>, and sign in with ${info.email} and this password. Your chat account is then linked and the assistant's tools run under your own identity.</p>
<p class="hint">This password gives no access to the console.</p>`,
    }),
  );
}
