// Escrow recovery (break-glass) in the console, a section of the Audit keys page: the open
// requests with an Approve button for everyone but their requester, the requester's one-time
// Fetch, and an owner's request form. Every action is a POST with the session's CSRF token;
// the API enforces the rules (another person approves, escrow/approval-rules.ts; requester-only
// single fetch). A refusal is shown with its code; a session signed in more than 5 minutes ago
// is offered a fresh sign-in that comes back here.
import { type AdminContext, type PageContext, type PageResult, page, redirect } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { type SafeHtml, html, path, query } from "../html.ts";
import { badge, code, csrfInput, dataTable, field, section, shell, time } from "../layout.ts";
import { problemText } from "./shared.ts";
import type { ApiProblem } from "../api-client.ts";
import type { RecoveryPolicy, RecoveryRequest as RecoveryRequestView } from "../../../contract/admin-api.ts";

/** A refusal with its code when it is one of recovery's own (recovery_approver_too_new, …). */
function recoveryProblem(p: ApiProblem): string {
  return p.code.startsWith("recovery_") ? `${problemText(p)} (${p.code})` : problemText(p);
}

/** Offered when the session signed in longer ago than approval allows: sign in again, come back. */
function freshSignIn(ctx: AdminContext, minutes: number): SafeHtml | "" {
  const at = ctx.session.principal.authenticatedAt ?? null;
  if (at !== null && ctx.deps.now() - at <= minutes * 60_000) return "";
  const again = `/sign-in${query({ org: ctx.session.principal.orgId, next: "/audit-keys#recovery", done: "fresh" })}`;
  return html`<p class="hint" data-fresh-sign-in>Approving needs a sign-in within the last ${minutes} minutes; this session signed in ${at === null ? "at a time not recorded" : html`at ${time(new Date(at).toISOString())}`}. <a href="${again}">Sign in again</a>, then approve.</p>`;
}

/** The API's view of a request (escrow/service.ts), one declaration for the API and this page. */
export type RecoveryRequest = RecoveryRequestView;

export const RECOVERY_NOTICES: Record<string, string> = {
  "recovery-requested": "Recovery requested. Another person must approve it: an owner or admin whose membership you never granted; then you can fetch the plaintext once.",
  "recovery-approved": "Recovery approved. Its requester can now fetch the plaintext, once.",
};

/** The section on the Audit keys page; `errors` collects what could not be read. */
export async function recoverySection(ctx: AdminContext, errors: string[], values: Record<string, string> = {}) {
  const [res, policy] = await Promise.all([ctx.api.get<{ requests: RecoveryRequest[] }>(ctx.api.org("/audit-recovery-requests")), ctx.api.get<RecoveryPolicy>(ctx.api.org("/audit-recovery-policy"))]);
  if (!res.ok) errors.push(problemText(res.problem));
  const open = (res.ok ? res.data.requests : []).filter((r) => r.status !== "consumed");
  const me = ctx.session.principal.accountId;
  const hours = policy.ok ? policy.data.effective_min_age_hours : 24;
  const minutes = policy.ok ? policy.data.fresh_sign_in_minutes : 5;
  const approvable = open.some((r) => r.status === "pending" && r.requested_by.account_id !== me);
  const action = (r: RecoveryRequest) => {
    if (r.status === "pending" && r.requested_by.account_id !== me) {
      return html`<form method="post" action="${path`/audit-recovery/${r.id}/approve`}">${csrfInput(ctx.session.csrfToken)}<button type="submit" class="btn btn-small" aria-label="Approve recovery ${r.id}">Approve</button></form>`;
    }
    if (r.status === "pending") return html`<span class="muted">waiting for another person to approve</span>`;
    if (r.requested_by.account_id === me) {
      return html`<form method="post" action="${path`/audit-recovery/${r.id}/fetch`}">${csrfInput(ctx.session.csrfToken)}<button type="submit" class="btn btn-small btn-danger" aria-label="Fetch plaintext of ${r.id}">Fetch plaintext (once)</button></form>`;
    }
    return html`<span class="muted">approved; only its requester can fetch</span>`;
  };
  const rows = open.map(
    (r) => html`<tr data-recovery="${r.id}">
  <td>${code(r.id)}<br><span class="muted">${time(r.created_at)}</span></td>
  <td>${code(r.record_id)}</td>
  <td>${r.requested_by.email ?? r.requested_by.account_id}</td>
  <td>${r.reason}</td>
  <td>${r.status === "pending" ? badge("pending", "warn") : badge("approved", "ok")}</td>
  <td>${action(r)}</td>
</tr>`,
  );
  const form =
    ctx.session.principal.role === "owner"
      ? html`<form method="post" action="/audit-recovery" class="stack">
  ${csrfInput(ctx.session.csrfToken)}
  ${field({ label: "Audit record id", name: "record_id", value: values.record_id, required: true, placeholder: "rec_…", autocomplete: "off" })}
  ${field({ label: "Reason", name: "reason", value: values.reason, required: true, placeholder: "incident 4711: the customer lost its audit identity", hint: "Kept in the audit trail with the request, the approval and the decryption." })}
  <div class="actions"><button type="submit" class="btn btn-secondary">Request recovery</button></div>
</form>`
      : html`<p class="muted">Only an owner can request a recovery; you can approve another owner's.</p>`;
  return section(
    "Escrow recovery (break-glass)",
    html`<p class="muted">Decrypts one record with the service-held escrow key: an owner requests it with a reason, another person approves, and the requester fetches the plaintext once.</p>
<p class="muted" data-approver-rule>The approver is an owner or admin whom the requester never created, invited, added or raised (not even through accounts the requester granted), not the same person at the single sign-on provider, a member for at least ${hours} hours when the request was made (and, through single sign-on, known by that provider identity as long), and signed in within the last ${minutes} minutes. Every step is announced to the other owners and admins.</p>
${dataTable("Open recovery requests", ["Request", "Record", "Requested by", "Reason", "Status", ""], rows, "No open recovery requests.")}${approvable ? freshSignIn(ctx, minutes) : ""}${form}`,
    { id: "recovery" },
  );
}

export async function postRecoveryRequest(
  pc: PageContext,
  back: (pc: PageContext, state: { error: string; values: Record<string, string>; status: number }) => Promise<PageResult>,
): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const f = ctx.form;
  const res = await ctx.api.send("POST", ctx.api.org("/audit-recovery-requests"), { record_id: (f.record_id ?? "").trim(), reason: (f.reason ?? "").trim() });
  if (!res.ok) return back(pc, { error: recoveryProblem(res.problem), values: f, status: res.problem.status });
  return redirect("/audit-keys?done=recovery-requested#recovery");
}

export async function postRecoveryApprove(pc: PageContext, back: (pc: PageContext, state: { error: string; status: number }) => Promise<PageResult>): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const res = await ctx.api.send("POST", ctx.api.org(`/audit-recovery-requests/${encodeURIComponent(ctx.params.id ?? "")}/approve`));
  if (!res.ok) return back(pc, { error: recoveryProblem(res.problem), status: res.problem.status });
  return redirect("/audit-keys?done=recovery-approved#recovery");
}

/** The one fetch: the plaintext is shown on this page only, never stored by the console. */
export async function postRecoveryFetch(pc: PageContext, back: (pc: PageContext, state: { error: string; status: number }) => Promise<PageResult>): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const id = ctx.params.id ?? "";
  const res = await ctx.api.postForText(ctx.api.org(`/audit-recovery-requests/${encodeURIComponent(id)}/fetch`));
  if (!res.ok) return back(pc, { error: recoveryProblem(res.problem), status: res.problem.status });
  return page(
    shell(ctx.session, {
      title: "Recovered arguments",
      active: "audit-keys",
      body: html`<div class="banner banner-warn" role="note">Shown once: the service hands out this plaintext only once and keeps no copy. Save what you need now.</div>
<section class="panel"><h2>Request ${code(id)}</h2><pre class="mono" data-plaintext>${res.data}</pre></section>
<p><a href="/audit-keys">Back to Audit keys</a></p>`,
    }),
  );
}
