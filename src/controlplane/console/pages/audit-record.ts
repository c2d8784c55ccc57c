// One audit record's detail page, and the audit view's CSV export (issue 15). The detail shows
// every stored field but the ciphertext (the console never fetches or decrypts it: the page
// says how to decrypt with your own identity), the deciding policy linked, the decision record
// an outcome belongs to and a decision's outcome record, and the hash-chain position. The
// export streams the admin API's CSV for the same filters as the page: every record they
// match, outcomes as rows of their own.
import { type PageContext, type PageResult, page } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { html, path, query, type SafeHtml } from "../html.ts";
import { badge, code, section, shell, time } from "../layout.ts";
import { adminEventSection } from "./admin-activity.ts";
import { apiFilters, auditFilters, type AuditRecordView, encryptionCell, policyCell, shadowCell } from "./audit.ts";
import { joinErrors, list } from "./shared.ts";

type Detail = AuditRecordView & {
  received_at?: string;
  organization_id?: string;
  workspace_id?: string;
  replica_id?: string | null;
  policy_revision?: number;
  ref?: string | null;
  tool_server?: string | null;
  prompt_tokens?: number;
  completion_tokens?: number;
  cost?: number;
  duration_ms?: number;
  chain_id?: string;
  chain_seq?: number;
  chain_prev?: string | null;
};

const RECORD_ID = /^rec_[0-9A-Z]{26}$/;

const dash = html`<span class="muted">—</span>`;
const opt = (v: string | number | null | undefined): SafeHtml => (v === null || v === undefined || v === "" ? dash : html`${String(v)}`);

/** The record's fields as a definition list. Pure. */
export function recordFields(r: Detail, policies: ReadonlyMap<string, { name: string }>): SafeHtml {
  const s = r.subject;
  const user = s.user_id ? html`<a href="/audit${query({ user: s.user_id, background: "all" })}">${s.email ?? s.user_id}</a> ${code(s.user_id)}` : html`${badge("via installation", "warn")}`;
  const rows: [string, SafeHtml][] = [
    ["Time", time(r.ts)],
    ["Received", time(r.received_at)],
    ["Kind", html`${r.kind}${r.task ? html` ${badge(`background task: ${r.task}`, "muted")}` : ""}`],
    ["Action", code(r.action)],
    ["Tool", r.tool_name ? code(r.tool_name) : dash],
    ["Tool server (MCP)", r.tool_server ? code(r.tool_server) : dash],
    ["Model", opt(r.model)],
    ["Decision", html`${badge(r.decision, r.decision === "permit" ? "ok" : "bad")} <span class="muted">${r.reason}</span>${shadowCell(r)}`],
    ["Policy", html`${policyCell(r.policy_id, policies)}${r.policy_revision !== undefined ? html` <span class="muted">bundle revision ${r.policy_revision}</span>` : ""}`],
    ["User", user],
    ["Chat user", opt(s.remote_user_id)],
    ["Installation", html`<a href="${path`/installations/${r.installation_id}`}">${r.installation_id}</a>`],
    ["Agent", code(r.agent_id)],
    ["Replica", opt(r.replica_id)],
    ["Decision record", r.ref ? html`<a href="${path`/audit/${r.ref}`}">${r.ref}</a>` : dash],
    ...(r.call_outcome !== undefined
      ? ([["Outcome record", r.call_outcome ? html`<a href="${path`/audit/${r.call_outcome.id}`}">${r.call_outcome.id}</a>` : html`<span class="muted">none recorded</span>`]] as [string, SafeHtml][])
      : []),
    ["Outcome", r.outcome ? html`${badge(r.outcome, r.outcome === "ok" ? "ok" : "bad")}${r.exit_code !== null && r.exit_code !== undefined ? html` exit ${r.exit_code}` : ""}` : dash],
    ["Tokens", r.prompt_tokens !== undefined ? html`${r.prompt_tokens} prompt, ${r.completion_tokens ?? 0} completion` : dash],
    ["Cost", opt(r.cost)],
    ["Duration", r.duration_ms !== undefined ? html`${r.duration_ms} ms` : dash],
    ["Arguments", encryptionCell(r)],
    ["Hash chain", r.chain_id ? html`${code(r.chain_id)} #${r.chain_seq ?? "?"}${r.chain_prev ? html`<br><span class="mono muted small">prev ${r.chain_prev}</span>` : ""}` : dash],
  ];
  return html`<dl class="props">${rows.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>`;
}

/** Where an admin event sits: its times and its place in the control plane's hash chain. Pure. */
export function adminRecordFields(r: Detail): SafeHtml {
  const rows: [string, SafeHtml][] = [
    ["Time", time(r.ts)],
    ["Received", time(r.received_at)],
    ["Workspace", r.workspace_id && r.workspace_id !== "controlplane" ? code(r.workspace_id) : dash],
    ["About record", r.ref ? html`<a href="${path`/audit/${r.ref}`}">${r.ref}</a>` : dash],
    ["Hash chain", r.chain_id ? html`${code(r.chain_id)} #${r.chain_seq ?? "?"}${r.chain_prev ? html`<br><span class="mono muted small">prev ${r.chain_prev}</span>` : ""}` : dash],
  ];
  return html`<dl class="props">${rows.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>`;
}

export async function getAuditRecord(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const id = ctx.params.id ?? "";
  const errors: string[] = [];
  const [got, policies] = await Promise.all([
    RECORD_ID.test(id) ? ctx.api.get<Detail>(ctx.api.org(path`/audit-records/${id}`)) : Promise.resolve(null),
    list<{ id: string; name: string }>(ctx, "/policies", "policies", errors),
  ]);
  const title = `Audit record ${id}`;
  if (!got || !got.ok) {
    const status = got ? got.problem.status : 404;
    const detail = got ? got.problem.detail : `"${id}" is not an audit record id (rec_ followed by 26 characters)`;
    return page(shell(ctx.session, { title, active: "audit", error: detail, body: html`<p><a href="/audit">All audit records</a></p>` }), status);
  }
  const r = got.data;
  if (r.admin)
    return page(
      shell(ctx.session, {
        title: `Admin event ${id}`,
        active: "admin-activity",
        lead: html`<a href="/audit/admin">← Admin activity</a>`,
        body: html`${adminEventSection(r)}${section("Record", adminRecordFields(r))}`,
      }),
    );
  const decrypt =
    r.encryption.mode === "recipients"
      ? html`<p>Decrypt its arguments on your own machine with an identity it is encrypted to: <code>svc audit decrypt ${r.id} --identity ~/.config/svc/audit-key.txt</code></p>`
      : html`<p class="muted">This record keeps only a keyed digest of its arguments.</p>`;
  return page(
    shell(ctx.session, {
      title,
      active: "audit",
      error: joinErrors(errors),
      lead: html`<a href="/audit">← All audit records</a>`,
      body: section("Record", html`${recordFields(r, new Map(policies.map((p) => [p.id, p])))}${decrypt}`),
    }),
  );
}

/** The page's filters as a CSV download, streamed from the admin API as it comes. */
export async function getAuditExport(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const f = auditFilters(ctx.url.searchParams);
  // Every record of the search, outcomes too: the file is the audit, not the page's one row per call.
  const { view: _view, ...filters } = apiFilters(f);
  const res = await ctx.api.raw(ctx.api.org(`/audit-records/export${query({ ...filters, format: "csv" })}`));
  if (res.ok) return { kind: "download", response: res };
  const problem = (await res.json().catch(() => ({}))) as { detail?: string };
  return page(
    shell(ctx.session, { title: "Audit export", active: "audit", error: problem.detail ?? `the export failed (${res.status})`, body: html`<p><a href="/audit">All audit records</a></p>` }),
    res.status,
  );
}
