// The admin-activity view (issue 27): the admin trail, newest first: every change to the admin
// plane and every refusal, whether made through the API, the CLI, the console, directory sync
// or bootstrap. Filters: actor (email, acc_…, system:…), action (a name or a prefix with *),
// result and time. Each row names the actor (and the address they came from), the action, the
// target and the result; its id opens the record's page (audit-record.ts), which shows the
// event's before and after field by field (`adminEventSection`).
import { ADMIN_ACTIONS, type AdminEventDetail, type AdminSeverity, fieldChanges } from "../../../contract/admin-event.ts";
import { type PageContext, type PageResult, page } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { type SafeHtml, html, path, query } from "../html.ts";
import { type Tone, badge, code, dataTable, field, searchSelect, section, shell, time } from "../layout.ts";
import { type AuditRecordView, utcFromLocalInput } from "./audit.ts";
import { joinErrors } from "./shared.ts";

const FILTERS = ["actor", "action", "result", "from", "to"] as const;
type Filters = Record<(typeof FILTERS)[number], string>;

const SEVERITY_TONES: Record<AdminSeverity, Tone> = { info: "muted", notice: "info", high: "warn" };

/** The page's filters from its query string. Pure. */
export function activityFilters(sp: URLSearchParams): Filters {
  return Object.fromEntries(FILTERS.map((k) => [k, (sp.get(k) ?? "").trim()])) as Filters;
}

/** The admin API's query: admin events only, with the page's filters. Pure. */
export function activityQuery(f: Filters): Record<string, string | null> {
  return { kind: "admin", actor: f.actor, action: f.action, result: ["ok", "refused"].includes(f.result) ? f.result : "", from: utcFromLocalInput(f.from), to: utcFromLocalInput(f.to) };
}

/** Who acted: the person (email, role) or the component, and from where. Pure. */
export function actorCell(d: AdminEventDetail): SafeHtml {
  const who = d.actor.email
    ? html`<a href="/audit/admin${query({ actor: d.actor.email })}">${d.actor.email}</a>${d.actor.role ? html` <span class="muted">${d.actor.role}</span>` : ""}`
    : code(d.actor.id);
  const via =
    d.actor.credential.kind === "none"
      ? ""
      : html`<br><span class="muted small">${d.actor.credential.kind.replace("_", " ")}${d.actor.credential.id ? html` <span class="mono">${d.actor.credential.id}</span>` : ""}</span>`;
  return html`${who}${via}${d.actor.ip ? html`<br><span class="muted small" data-address>from ${d.actor.ip}</span>` : ""}`;
}

export function targetCell(d: AdminEventDetail): SafeHtml {
  const { type, id, name } = d.target;
  return html`<span class="muted">${type.replace(/_/g, " ")}</span> ${name ? html`${name}` : ""}${id && id !== name ? html`<br><span class="mono muted small">${id}</span>` : ""}`;
}

export function resultCell(d: AdminEventDetail): SafeHtml {
  return d.result === "ok" ? badge("ok", "ok") : html`${badge(`refused ${d.status}`, "bad")}${d.code ? html`<br><span class="mono muted small">${d.code}</span>` : ""}`;
}

function row(r: AuditRecordView): SafeHtml {
  const d = r.admin!;
  return html`<tr data-event="${r.id}">
  <td>${time(r.ts)}<br><a class="mono small" href="${path`/audit/${r.id}`}">${r.id}</a></td>
  <td data-actor>${actorCell(d)}</td>
  <td data-action>${code(r.action)}<br>${badge(d.severity, SEVERITY_TONES[d.severity])}</td>
  <td data-target>${targetCell(d)}</td>
  <td data-result>${resultCell(d)}</td>
</tr>`;
}

const value = (v: unknown): SafeHtml => (v === undefined ? html`<span class="muted">—</span>` : html`<code class="value">${typeof v === "string" ? v : JSON.stringify(v)}</code>`);

/** Before and after, field by field; a changed field is marked. Pure. */
export function changeTable(before: unknown, after: unknown): SafeHtml {
  const fields = fieldChanges(before, after);
  if (fields.length === 0) return html`<p class="muted">Nothing before or after: the event tells of an attempt or an action, not of a stored change.</p>`;
  const rows = fields.map(
    (c) =>
      html`<tr ${c.changed ? html`class="changed"` : ""} data-field="${c.field}"><th scope="row">${c.field}${c.changed ? html` <span class="visually-hidden">(changed)</span>` : ""}</th><td>${value(c.before)}</td><td>${value(c.after)}</td></tr>`,
  );
  return dataTable("Before and after", ["Field", "Before", "After"], rows, "");
}

/** The detail page's account of an admin event: who, from where, what, and the change. */
export function adminEventSection(r: AuditRecordView): SafeHtml {
  const d = r.admin!;
  const rows: [string, SafeHtml][] = [
    ["Action", html`${code(r.action)} ${badge(d.severity, SEVERITY_TONES[d.severity])}`],
    ["Actor", actorCell(d)],
    ["Actor id", code(d.actor.id)],
    ["User agent", d.actor.user_agent ? html`<span class="small">${d.actor.user_agent}</span>` : html`<span class="muted">—</span>`],
    ["Target", targetCell(d)],
    ["Result", html`${resultCell(d)} <span class="muted">HTTP ${d.status === 0 ? "— (no request)" : d.status}</span>`],
    ["What happened", html`${r.reason}`],
  ];
  return section("Admin event", html`<dl class="props">${rows.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl><h3>Before and after</h3>${changeTable(d.before, d.after)}`);
}

export async function getAdminActivity(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const f = activityFilters(ctx.url.searchParams);
  const cursor = ctx.url.searchParams.get("cursor");
  const got = await ctx.api.get<{ records: AuditRecordView[]; next_cursor: string | null }>(ctx.api.org(`/audit-records${query({ ...activityQuery(f), cursor, limit: 50 })}`));
  const errors = got.ok ? [] : [got.problem.detail];
  const records = got.ok ? got.data.records.filter((r) => r.admin) : [];
  const actions = Object.keys(ADMIN_ACTIONS);
  const prefixes = [...new Set(actions.map((a) => `${a.slice(0, a.lastIndexOf(".") + 1)}*`))];
  const filters = html`<section class="panel" aria-labelledby="search-h"><h2 id="search-h">Search</h2>
<form method="get" action="/audit/admin" class="inline" role="search" aria-label="Search admin activity">
  ${field({ label: "Actor", name: "actor", value: f.actor, placeholder: "email, acc_… or system:…", quiet: true })}
  ${field({ label: "Action", name: "action", value: f.action, placeholder: "policy.update or policy.*", quiet: true, attrs: html`list="admin-actions"` })}
  <datalist id="admin-actions">${[...prefixes, ...actions].map((a) => html`<option value="${a}"></option>`)}</datalist>
  ${searchSelect("Result", "result", f.result, [
    ["", "any"],
    ["ok", "carried out"],
    ["refused", "refused"],
  ])}
  ${field({ label: "From (UTC)", name: "from", type: "datetime-local", value: f.from, quiet: true })}
  ${field({ label: "To (UTC)", name: "to", type: "datetime-local", value: f.to, quiet: true })}
  <div class="actions"><button type="submit" class="btn">Search</button><a href="/audit/admin" class="btn btn-ghost">Clear</a></div>
</form></section>`;
  const next =
    got.ok && got.data.next_cursor
      ? html`<nav class="pager" aria-label="Pages"><a class="btn btn-secondary" href="/audit/admin${query({ ...f, cursor: got.data.next_cursor })}">Older events →</a></nav>`
      : "";
  return page(
    shell(ctx.session, {
      title: "Admin activity",
      active: "admin-activity",
      lead: "Every change to the admin plane and every refused admin request, newest first; times in UTC. Whether made through the API, the CLI, this console, directory sync or bootstrap, each is one event naming who acted and from where. Secrets appear only as digests. Open an event to see its before and after.",
      error: joinErrors(errors),
      body: html`${filters}${dataTable("Admin events", ["Time", "Actor", "Action", "Target", "Result"], records.map(row), "No admin events match.")}${next}`,
    }),
    got.ok ? 200 : got.problem.status,
  );
}
