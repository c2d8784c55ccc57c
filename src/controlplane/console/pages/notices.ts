// The notices area (issue 27): another person's escrow recovery steps, changes of its rule and
// of the single sign-on provider, shown to each owner and admin on the overview (the page a
// sign-in lands on) and on the Audit keys page, until they dismiss each one for themselves
// (notices/service.ts).
import type { Notice } from "../../../contract/admin-api.ts";
import { type AdminContext, type PageContext, type PageResult, page, redirect, safeNext } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { type SafeHtml, html, path } from "../html.ts";
import { csrfInput, shell, time } from "../layout.ts";
import { problemText } from "./shared.ts";

/** The notice of a change of the single sign-on provider (settings.ts). */
export const SSO_NOTICE_ACTION = "sso.provider";

const TITLES: Record<string, string> = {
  [SSO_NOTICE_ACTION]: "Single sign-on provider changed",
  "audit:recovery.request": "Escrow recovery requested",
  "audit:recovery.approve": "Escrow recovery approved",
  "audit:recovery.decrypt": "Escrow recovery: plaintext fetched",
  "audit:recovery.policy": "Escrow recovery approver rule changed",
};

const title = (n: Notice) => (n.action === "audit:recovery.approve" && n.result === "refused" ? "Escrow recovery approval refused" : (TITLES[n.action] ?? n.action));

/** The caller's open notices, each with its Dismiss button; nothing when there are none. */
export async function noticesArea(ctx: AdminContext, back: string): Promise<SafeHtml | ""> {
  const res = await ctx.api.get<{ notices: Notice[] }>(ctx.api.org("/notices"));
  if (!res.ok || res.data.notices.length === 0) return "";
  return html`<section class="notices" aria-label="Notifications">
${res.data.notices.map(
  (n) => html`<div class="banner ${n.result === "refused" ? "banner-error" : "banner-warn"}" role="note" data-notice="${n.id}">
  <p><strong>${title(n)}</strong> ${time(n.created_at)}: ${n.text}</p>
  <form method="post" action="${path`/notices/${n.id}/dismiss`}">${csrfInput(ctx.session.csrfToken)}<input type="hidden" name="next" value="${back}"><button type="submit" class="btn btn-small btn-ghost" aria-label="Dismiss notice: ${title(n)}">Dismiss</button></form>
</div>`,
)}
</section>`;
}

export async function postDismissNotice(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const next = safeNext(ctx.form.next);
  const res = await ctx.api.send("POST", ctx.api.org(`/notices/${encodeURIComponent(ctx.params.id ?? "")}/dismiss`));
  if (!res.ok) return page(shell(ctx.session, { title: "Notice", active: "none", error: problemText(res.problem), body: html`<p><a href="${next}">Back</a></p>` }), res.problem.status);
  return redirect(next);
}
