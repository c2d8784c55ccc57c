// Approving `svc login` (a device-style login): the page shows the code the terminal shows, and
// an owner or admin approves the request; the CLI then receives an API token acting for them.
// The token carries this session's sign-in time: when that is more than 5 minutes ago the page
// says so and offers a fresh sign-in first, since approving an escrow recovery needs one.
import type { LoginRequestView } from "../../../contract/admin-api.ts";
import { type PageContext, type PageResult, apiFor, isAdmin, page, redirect, requireSignedIn } from "../context.ts";
import { html, path, query } from "../html.ts";
import { csrfInput, forbiddenPage, shell, time } from "../layout.ts";
import { FRESH_SIGN_IN_MS } from "../../escrow/approval-rules.ts";

/** When this session's sign-in is too old for the token to approve escrow recoveries: a fresh one first. */
function staleNote(c: PageContext & { session: { principal: { orgId: string; authenticatedAt?: number | null } } }, id: string) {
  const at = c.session.principal.authenticatedAt ?? null;
  if (at !== null && c.deps.now() - at <= FRESH_SIGN_IN_MS) return "";
  const again = `/sign-in${query({ org: c.session.principal.orgId, next: `/login/approve${query({ request: id })}`, done: "fresh" })}`;
  return html`<p class="hint" data-fresh-sign-in>This session signed in ${at === null ? "at a time not recorded" : html`at ${time(new Date(at).toISOString())}`}; the token carries that time, so it cannot approve an escrow recovery (that needs a sign-in within the last 5 minutes). <a href="${again}">Sign in again</a> first if you need to.</p>`;
}

export async function getLoginApprove(ctx: PageContext): Promise<PageResult> {
  const c = requireSignedIn(ctx);
  if (!isAdmin(c.session)) return page(forbiddenPage(c), 403);
  const id = ctx.url.searchParams.get("request") ?? "";
  const s = c.session;
  const title = "Approve svc login";
  if (!id) return page(shell(s, { title, active: "none", error: "this page needs the link `svc login` printed (…/login/approve?request=…)", body: "" }), 400);
  const got = await apiFor(c).get<LoginRequestView>(path`/api/v1/auth/login-requests/${id}`);
  if (!got.ok) return page(shell(s, { title, active: "none", error: got.problem.detail, body: html`<p>Run <code>svc login</code> again to get a new link.</p>` }), got.problem.status);
  const r = got.data;
  const done = ctx.url.searchParams.get("done") === "approved" || r.status === "approved";
  const body = html`<section class="panel" aria-labelledby="code-h">
<h2 id="code-h">Code shown in your terminal</h2>
<p class="user-code" aria-describedby="code-help">${r.user_code}</p>
<p id="code-help">Approve only if your terminal shows exactly this code and you ran <code>svc login</code> yourself just now. The command line will act as <strong>${s.principal.email}</strong> in <strong>${s.orgName}</strong>.</p>
${
  r.status === "expired"
    ? html`<p class="banner banner-warn">This request has expired or was already used. Run <code>svc login</code> again.</p>`
    : done
      ? html`<p class="muted">You can close this page; the terminal finishes by itself.</p>`
      : html`${staleNote(c, r.id)}<form method="post" action="/login/approve" class="actions">
  ${csrfInput(s.csrfToken)}
  <input type="hidden" name="request" value="${r.id}">
  <button type="submit" class="btn">Approve svc login</button>
  <span class="hint">Expires ${time(r.expires_at)}</span>
</form>`
}
</section>`;
  return page(shell(s, { title, active: "none", notice: done && r.status !== "expired" ? "Approved. Return to your terminal." : null, body }));
}

export async function postLoginApprove(ctx: PageContext): Promise<PageResult> {
  const c = requireSignedIn(ctx);
  if (!isAdmin(c.session)) return page(forbiddenPage(c), 403);
  const id = ctx.form.request ?? "";
  const res = await apiFor(c).send<{ approved: boolean }>("POST", path`/api/v1/auth/login-requests/${id}/approve`, {});
  if (!res.ok) {
    return page(
      shell(c.session, { title: "Approve svc login", active: "none", error: res.problem.detail, body: html`<p><a href="/login/approve${query({ request: id })}">Back to the request</a></p>` }),
      res.problem.status,
    );
  }
  return redirect(`/login/approve${query({ request: id, done: "approved" })}`);
}
