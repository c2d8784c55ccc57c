// The audit view: search by tool name (prefix or glob) and decision, plus kind, user,
// installation, policy and time; Open WebUI's background tasks (titles, tags, follow-ups) are
// marked and hidden unless asked for. One row per call (issue 33): the decision and, beside it,
// the call's outcome (the API's view=calls), each record's id opening its detail page
// (audit-record.ts), which also serves the CSV export; asking for outcomes lists those records
// alone. Each row shows the policy that decided (linked), and whether the arguments are
// encrypted (to which key ids) or digest-only. The console never fetches ciphertext and never
// decrypts (spec §2, Audit record).
import type { AuditRecordView } from "../../../contract/admin-api.ts";
import { type PageContext, type PageResult, page } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { type SafeHtml, html, path, query } from "../html.ts";
import { type Tone, badge, code, dataTable, field, searchSelect, shell, time } from "../layout.ts";
import type { Installation } from "./overview.ts";
import { byId, joinErrors, list, named } from "./shared.ts";

export type { AuditRecordView } from "../../../contract/admin-api.ts";

const DECISION_TONES: Record<string, Tone> = { permit: "ok", deny: "bad", ask: "warn" };
const FILTERS = ["tool", "decision", "kind", "background", "user", "installation", "from", "to", "policy", "shadow", "args_digest", "digest_key_id"] as const;
export type AuditFilterValues = Record<(typeof FILTERS)[number], string>;

/** The page's filters from its query string. */
export function auditFilters(sp: URLSearchParams): AuditFilterValues {
  return Object.fromEntries(FILTERS.map((k) => [k, (sp.get(k) ?? "").trim()])) as AuditFilterValues;
}

/** The admin API's query for the page's filters: background tasks hidden unless "all" or "only". Pure. */
export function apiFilters(f: AuditFilterValues): Record<string, string | null> {
  return {
    // one row per call, except when the outcome records themselves are asked for
    view: f.kind === "outcome" ? "records" : "calls",
    tool: f.tool,
    decision: f.decision,
    // The runtimes' records only: the admin trail has its own page (admin-activity.ts).
    kind: ["tool", "model", "outcome"].includes(f.kind) ? f.kind : "runtime",
    background: f.background === "all" ? "" : f.background === "only" ? "only" : "hide",
    user: f.user,
    installation: f.installation,
    from: utcFromLocalInput(f.from),
    to: utcFromLocalInput(f.to),
    policy: f.policy,
    shadow: f.shadow === "changed" ? "changed" : "",
    args_digest: f.args_digest,
    digest_key_id: f.digest_key_id,
  };
}

/** Calls with the same arguments: a digest groups within its key only (docs/digest-key.md). */
function sameArgumentsLink(r: Pick<AuditRecordView, "args_digest" | "digest_key_id">): SafeHtml | "" {
  if (!r.args_digest || !r.digest_key_id) return "";
  return html`<br><a class="small" href="/audit${query({ args_digest: r.args_digest, digest_key_id: r.digest_key_id, background: "all" })}">same arguments</a>`;
}

/** The policy that decided, by name, linked to it; the reason alone when none did. */
export function policyCell(id: string | null | undefined, names: ReadonlyMap<string, { name: string }>): SafeHtml {
  if (!id) return html`<span class="muted">no policy</span>`;
  const p = names.get(id);
  return html`<a href="/policies#${id}" title="${id}">${p ? p.name : id}</a>${p ? "" : html` <span class="muted">(deleted)</span>`}`;
}

/** Open WebUI's background tasks, marked so they are not mistaken for a user's turn. */
export function taskBadge(task: string | null | undefined): SafeHtml | "" {
  return task ? html`<br>${badge(`background: ${task.replace(/_generation$/, "")}`, "muted")}` : "";
}

/** What the shadow policies would have decided, marked when it differs from what was enforced. */
export function shadowCell(r: Pick<AuditRecordView, "decision" | "shadow">): SafeHtml | "" {
  if (!r.shadow) return "";
  const changed = r.shadow.decision !== r.decision;
  return html`<br>${badge(changed ? `shadow: would ${r.shadow.decision}` : "shadow: same", changed ? "warn" : "muted")}${
    r.shadow.policy_id ? html` <span class="muted mono small">${r.shadow.policy_id}</span>` : ""
  }${changed ? html`<br><span class="muted small">${r.shadow.reason}</span>` : ""}`;
}

/** `2025-01-31T10:00` from a datetime-local field, read as UTC → ISO 8601 for the API. */
export function utcFromLocalInput(value: string | null): string | null {
  if (!value) return null;
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})(:\d{2})?$/.exec(value.trim());
  if (m) return `${m[1]}T${m[2]}${m[3] ?? ":00"}Z`;
  return value.trim();
}

/** What the record says about its arguments, without ever showing them. */
export function encryptionCell(r: Pick<AuditRecordView, "encryption" | "args_digest" | "digest_key_id">): SafeHtml {
  if (r.encryption.mode === "recipients") {
    const ids = r.encryption.key_ids;
    return html`${badge(ids.length === 1 ? "encrypted to 1 key" : `encrypted to ${ids.length} keys`, "info")}<ul class="key-ids">${ids.map((k) => html`<li class="mono">${k}</li>`)}</ul>${sameArgumentsLink(r)}`;
  }
  return html`${badge("digest-only", "muted")}${r.args_digest ? html`<br><span class="mono muted" title="${r.args_digest}">${r.args_digest.slice(0, 24)}…</span>` : ""}${
    r.digest_key_id ? html`<br><span class="muted">digest key <span class="mono">${r.digest_key_id}</span></span>` : ""
  }${sameArgumentsLink(r)}`;
}

/** A call's outcome beside its decision: what happened, and its own record one click away. Pure. */
export function outcomeCell(r: Pick<AuditRecordView, "decision" | "kind" | "call_outcome" | "outcome" | "exit_code" | "ref">): SafeHtml {
  if (r.kind === "outcome") {
    // the outcome records themselves (kind=outcome): what they belong to
    return html`${badge(r.outcome ?? "?", r.outcome === "ok" ? "ok" : "bad")}${r.exit_code !== null && r.exit_code !== undefined ? html` <span class="muted">exit ${r.exit_code}</span>` : ""}${
      r.ref ? html`<br><span class="muted small">of</span> <a class="mono small" href="${path`/audit/${r.ref}`}">${r.ref}</a>` : ""
    }`;
  }
  const o = r.call_outcome;
  if (!o) return html`<span class="muted">${r.decision === "permit" ? "none recorded yet" : "not run"}</span>`;
  const extra =
    o.prompt_tokens !== undefined
      ? html` <span class="muted">${o.prompt_tokens + (o.completion_tokens ?? 0)} tokens</span>`
      : o.duration_ms !== undefined
        ? html` <span class="muted">${o.duration_ms} ms</span>`
        : "";
  return html`${badge(o.outcome ?? "?", o.outcome === "ok" ? "ok" : "bad")}${o.exit_code !== null ? html` <span class="muted">exit ${o.exit_code}</span>` : ""}${extra}<br><a class="mono small" href="${path`/audit/${o.id}`}" aria-label="outcome record ${o.id}">${o.id}</a>`;
}

function subjectCell(s: AuditRecordView["subject"]): SafeHtml {
  if (s.user_id) return html`${s.email ?? code(s.user_id)}${s.remote_user_id ? html`<br><span class="muted">chat user ${s.remote_user_id}</span>` : ""}`;
  return html`${badge("via installation", "warn")}${s.remote_user_id ? html`<br><span class="muted">unlinked chat user ${s.remote_user_id}</span>` : ""}`;
}

export async function getAudit(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const sp = ctx.url.searchParams;
  const f = auditFilters(sp);
  const cursor = sp.get("cursor");
  const errors: string[] = [];
  const apiQuery = query({ ...apiFilters(f), cursor, limit: 50 });
  const [got, installations, policies] = await Promise.all([
    ctx.api.get<{ records: AuditRecordView[]; next_cursor: string | null }>(ctx.api.org(`/audit-records${apiQuery}`)),
    list<Installation>(ctx, "/installations", "installations", errors),
    list<{ id: string; name: string }>(ctx, "/policies", "policies", errors),
  ]);
  const policyMap = byId(policies);
  if (!got.ok) errors.unshift(got.problem.detail);
  const records = got.ok ? (got.data.records ?? []) : [];
  const instMap = byId(installations);
  const rows = records.map(
    (r) => html`<tr>
  <td>${time(r.ts)}<br><a class="mono small" href="${path`/audit/${r.id}`}">${r.id}</a></td>
  <td>${r.tool_name ? html`${code(r.tool_name)}${r.tool_server ? html`<br><span class="muted">MCP server ${r.tool_server}</span>` : ""}` : html`${code(r.action)}${r.model ? html`<br><span class="muted">${r.model}</span>` : ""}`}<br><span class="muted">${r.kind}</span>${taskBadge(r.task)}</td>
  <td class="wrap">${r.kind === "outcome" ? html`<span class="muted">outcome</span>` : html`${badge(r.decision, DECISION_TONES[r.decision] ?? "muted")}<br><span class="muted">${r.reason}</span><br>${policyCell(r.policy_id, policyMap)}${shadowCell(r)}`}</td>
  <td data-outcome>${outcomeCell(r)}</td>
  <td>${subjectCell(r.subject)}</td>
  <td>${named(instMap, r.installation_id)}</td>
  <td>${encryptionCell(r)}</td>
</tr>`,
  );
  const filters = html`<section class="panel" aria-labelledby="search-h"><h2 id="search-h">Search</h2>
<form method="get" action="/audit" class="inline" role="search" aria-label="Search audit records">
  ${field({ label: "Tool name (prefix or glob)", name: "tool", value: f.tool, placeholder: "crm. or crm.*", quiet: true })}
  ${searchSelect("Decision", "decision", f.decision, [
    ["", "any"],
    ["permit", "permit"],
    ["deny", "deny"],
    ["ask", "ask"],
  ])}
  ${searchSelect("Kind", "kind", f.kind, [
    ["", "any call"],
    ["tool", "tool calls"],
    ["model", "model calls"],
    ["outcome", "outcome records alone"],
  ])}
  ${searchSelect("Background tasks", "background", f.background, [
    ["", "hidden"],
    ["all", "shown"],
    ["only", "only these"],
  ])}
  ${field({ label: "User", name: "user", value: f.user, placeholder: "email or usr_…", quiet: true })}
  ${searchSelect("Installation", "installation", f.installation, [["", "any"], ...installations.map((i) => [i.id, i.name] as const)])}
  ${field({ label: "From (UTC)", name: "from", type: "datetime-local", value: f.from, quiet: true })}
  ${field({ label: "To (UTC)", name: "to", type: "datetime-local", value: f.to, quiet: true })}
  ${field({ label: "Policy", name: "policy", value: f.policy, placeholder: "pol_…", quiet: true })}
  ${searchSelect("Shadow", "shadow", f.shadow, [
    ["", "any"],
    ["changed", "shadow would change"],
  ])}
  ${f.args_digest ? html`<input type="hidden" name="args_digest" value="${f.args_digest}"><input type="hidden" name="digest_key_id" value="${f.digest_key_id}"><p class="muted small">Calls with the same arguments: digest <span class="mono">${f.args_digest.slice(0, 24)}…</span> under key <span class="mono">${f.digest_key_id || "any"}</span></p>` : ""}
  <div class="actions"><button type="submit" class="btn">Search</button><a href="/audit" class="btn btn-ghost">Clear</a><a href="/audit/export.csv${query(f)}" class="btn btn-secondary" download>Export CSV</a></div>
</form></section>`;
  const next =
    got.ok && got.data.next_cursor
      ? html`<nav class="pager" aria-label="Pages"><a class="btn btn-secondary" href="/audit${query({ ...f, cursor: got.data.next_cursor })}">Older records →</a></nav>`
      : "";
  return page(
    shell(ctx.session, {
      title: "Audit records",
      active: "audit",
      lead: "Every model call and governed tool call, newest first, one row each: svc's decision and, beside it, what the call did (its outcome record); times in UTC. Open WebUI's background tasks (chat titles, tags, follow-up suggestions) are hidden unless you ask for them. Arguments are never shown here: a record is either encrypted to customer keys (decrypt with svc audit decrypt and your own identity) or keeps only a digest.",
      error: joinErrors(errors),
      body: html`${filters}${dataTable("Audit records", ["Time and record", "Tool or action", "Decision", "Outcome", "User", "Installation", "Arguments"], rows, "No records match.")}${next}`,
    }),
    got.ok ? 200 : got.problem.status,
  );
}
