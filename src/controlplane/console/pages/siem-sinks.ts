// SIEM sinks (issue 15): where the organization's audit records are streamed, each with its
// delivery health (ok, pending, failing with the last error; an error a later delivery got
// past is marked over, not shown as current) and lag (records received but not yet delivered,
// and how long the oldest has waited). A form adds a sink (the secret is a password field, sent
// once to the API and never shown again); deleting one asks first. With the demo's loopback
// opt-in (SVC_CP_ALLOW_LOOPBACK_SINKS) the page says how to try a receiver on this machine.
import { type PageContext, type PageResult, page, redirect } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { type SafeHtml, html, path } from "../html.ts";
import { badge, code, csrfInput, dataTable, field, section, selectField, shell, time } from "../layout.ts";
import { confirmationPage } from "./confirm.ts";
import { joinErrors, list, problemText } from "./shared.ts";
import type { Sink as SinkView } from "../../../contract/admin-api.ts";

const KIND_LABEL: Record<string, string> = { webhook: "HTTPS webhook (Splunk HEC)", syslog: "syslog over TLS", otlp: "OTLP/HTTP logs" };
const FORMAT_LABEL: Record<string, string> = { svc: "svc's record as stored", ocsf: "OCSF 1.8.0", ecs: "Elastic Common Schema 9.4.0" };

function status(s: SinkView) {
  if (s.health.status === "ok") return badge("ok", "ok");
  if (s.health.status === "pending") return badge("pending", "muted");
  return badge(`failing (${s.health.failures})`, "bad");
}

/** The last error while it is the sink's state; once a later delivery succeeded, only that it is over. Pure. */
export function lastErrorCell(h: Pick<SinkView["health"], "status" | "last_error" | "last_error_at" | "last_success_at" | "next_attempt_at">): SafeHtml {
  if (!h.last_error) return html`<span class="muted">none</span>`;
  const over = h.status !== "failing" && h.last_success_at !== null && (h.last_error_at === null || h.last_success_at > h.last_error_at);
  if (over) return html`<span class="muted">none now</span><br><span class="muted small">the failure at ${time(h.last_error_at)} is over</span>`;
  return html`${time(h.last_error_at)}<br><span class="muted">${h.last_error}</span>${h.next_attempt_at ? html`<br><span class="muted">next try ${time(h.next_attempt_at)}</span>` : ""}`;
}

type FormState = { error?: string | null; values?: Record<string, string>; status?: number };

const NOTICES: Record<string, string> = {
  created: "Sink created. Records received from now on (or all of them, with backfill) are delivered to it.",
  deleted: "Sink deleted. Its undelivered backlog is no longer sent; the records stay stored.",
};

export async function getSiemSinks(pc: PageContext, state: FormState = {}): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const v = state.values ?? {};
  const errors: string[] = [];
  const sinks = await list<SinkView>(ctx, "/siem-sinks", "sinks", errors);
  const rows = sinks.map(
    (s) => html`<tr data-sink="${s.name}">
  <td><strong>${s.name}</strong><br><span class="muted mono">${s.id}</span></td>
  <td class="wrap">${KIND_LABEL[s.kind] ?? s.kind}<br>${code(s.endpoint)}${s.format !== "svc" ? html`<br><span class="muted">${FORMAT_LABEL[s.format] ?? s.format} events</span>` : ""}${s.include_ciphertext ? html`<br><span class="muted">with ciphertext</span>` : ""}</td>
  <td data-status>${status(s)}</td>
  <td data-delivered>${s.health.delivered}</td>
  <td data-lag>${s.health.lag_records}${s.health.lag_records_capped ? "+" : ""} records<br><span class="muted">${s.health.lag_seconds} s behind</span></td>
  <td>${time(s.health.last_success_at)}</td>
  <td data-last-error class="wrap">${lastErrorCell(s.health)}</td>
  <td><a class="btn btn-small btn-secondary" href="${path`/siem-sinks/${s.id}/delete`}" aria-label="Delete sink ${s.name}…">Delete…</a></td>
</tr>`,
  );
  const failing = sinks.filter((s) => s.health.status === "failing").length;
  const banner =
    failing > 0
      ? html`<div class="banner banner-warn">${failing === 1 ? "1 sink is" : `${failing} sinks are`} failing: records wait for it and are delivered once the receiver answers again (nothing is dropped).</div>`
      : "";
  return page(
    shell(ctx.session, {
      title: "SIEM sinks",
      active: "siem-sinks",
      lead: "Audit records streamed to your SIEM: an HTTPS webhook (Splunk HEC body, HMAC-signed), syslog over TLS or OTLP/HTTP logs. At-least-once, in ingest order; the record id is the event id.",
      notice: NOTICES[ctx.url.searchParams.get("done") ?? ""] ?? null,
      error: state.error ?? joinErrors(errors),
      body: html`${banner}${section(
        "Sinks",
        dataTable(
          "SIEM sinks",
          ["Sink", "Kind and endpoint", "Status", "Delivered", "Lag", "Last success", "Last error", "Actions"],
          rows,
          "No sinks yet: add one with the form below (or svc audit sinks create).",
        ),
      )}${ctx.deps.config.allowLoopbackSinks ? tryLocally() : ""}${section("Add a sink", form(ctx.session.csrfToken, v))}`,
    }),
    state.status ?? 200,
  );
}

/** Shown while the demo's loopback opt-in is on: how to try a sink with the example receiver (docs/siem.md). */
function tryLocally(): SafeHtml {
  return html`<div class="banner banner-info" role="note" data-try-locally><strong>Try a sink on this machine.</strong> This control plane lets sinks reach a receiver on loopback (<code>SVC_CP_ALLOW_LOOPBACK_SINKS=1</code>, set by <code>scripts/start.sh --demo</code>; other private addresses stay refused). Start the example receiver with a secret of 16+ characters, <code>SIEM_SECRET=&lt;secret&gt; bun examples/siem-receiver/server.ts 8088</code>, then add a webhook sink with the endpoint <code>http://127.0.0.1:8088/hec</code> and the same secret: it prints each audit record it receives.</div>`;
}

function form(csrf: string, v: Record<string, string>) {
  return html`<form method="post" action="/siem-sinks" class="stack">
  ${csrfInput(csrf)}
  ${field({ label: "Name", name: "name", value: v.name, required: true, placeholder: "splunk" })}
  ${selectField({ label: "Kind", name: "kind", value: v.kind ?? "webhook", required: true, options: Object.entries(KIND_LABEL).map(([value, label]) => ({ value, label })) })}
  ${selectField({ label: "Event format", name: "format", value: v.format ?? "svc", required: true, options: Object.entries(FORMAT_LABEL).map(([value, label]) => ({ value, label })) })}
  ${field({ label: "Endpoint", name: "endpoint", value: v.endpoint, required: true, placeholder: "https://siem.example.com:8088/services/collector/event", hint: html`webhook and OTLP: an <code>https://</code> URL; syslog: <code>host:port</code> of the TLS listener.` })}
  ${field({ label: "Secret", name: "secret", type: "password", autocomplete: "new-password", mark: "(required for a webhook)", hint: "webhook: the HMAC-SHA256 key, 16+ characters (required); OTLP: a bearer token (optional); syslog: none (leave empty). Never shown again." })}
  <div class="field"><label for="f-ca_pem">CA certificate (PEM) <span class="optional">(optional)</span></label>
  <textarea id="f-ca_pem" name="ca_pem" rows="4" spellcheck="false" placeholder="-----BEGIN CERTIFICATE-----">${v.ca_pem ?? ""}</textarea></div>
  <div class="field"><label><input type="checkbox" name="include_ciphertext" value="on" ${v.include_ciphertext ? html`checked` : ""}> Include each record's ciphertext (default: digest-only fields)</label></div>
  <div class="field"><label><input type="checkbox" name="backfill" value="on" ${v.backfill ? html`checked` : ""}> Also deliver the records already stored</label></div>
  <div class="actions"><button type="submit" class="btn">Create sink</button></div>
</form>`;
}

export async function postSiemSink(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const f = ctx.form;
  const body = {
    name: (f.name ?? "").trim(),
    kind: f.kind ?? "",
    endpoint: (f.endpoint ?? "").trim(),
    ...(f.secret ? { secret: f.secret } : {}),
    ...(f.ca_pem?.trim() ? { ca_pem: f.ca_pem.trim() } : {}),
    ...(f.format ? { format: f.format } : {}),
    include_ciphertext: f.include_ciphertext === "on",
    backfill: f.backfill === "on",
  };
  const res = await ctx.api.send("POST", ctx.api.org("/siem-sinks"), body);
  // The form comes back filled, but never with the secret.
  if (!res.ok) return getSiemSinks(pc, { error: problemText(res.problem), values: { ...f, secret: "" }, status: res.problem.status });
  return redirect("/siem-sinks?done=created");
}

/** The confirmation before a sink is deleted. */
export async function getDeleteSiemSink(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const s = (await list<SinkView>(ctx, "/siem-sinks", "sinks", errors)).find((x) => x.id === ctx.params.id);
  if (!s)
    return page(
      shell(ctx.session, {
        title: "Delete SIEM sink",
        active: "siem-sinks",
        error: joinErrors(errors) ?? `No sink ${ctx.params.id ?? ""} in this organization.`,
        body: html`<p><a href="/siem-sinks">All sinks</a></p>`,
      }),
      404,
    );
  return confirmationPage(ctx, {
    title: `Delete sink "${s.name}"?`,
    active: "siem-sinks",
    heading: "Deleting a sink stops its deliveries at once",
    warning: html`<strong>Records not delivered yet (${s.health.lag_records}${s.health.lag_records_capped ? "+" : ""}) are never sent to it.</strong> The records stay stored here; a new sink with backfill can deliver them again. This cannot be undone.`,
    facts: [
      ["Sink", html`${s.name} ${code(s.id)}`],
      ["Sends to", html`${KIND_LABEL[s.kind] ?? s.kind} ${code(s.endpoint)}`],
    ],
    action: path`/siem-sinks/${s.id}/delete`,
    button: "Delete sink",
    back: "/siem-sinks",
  });
}

export async function postDeleteSiemSink(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const res = await ctx.api.send("DELETE", ctx.api.org(path`/siem-sinks/${ctx.params.id ?? ""}`));
  if (!res.ok) return getSiemSinks(pc, { error: problemText(res.problem), status: res.problem.status });
  return redirect("/siem-sinks?done=deleted");
}
