// SIEM sinks (issue 15): where the organization's audit records are streamed, each with its
// delivery health (ok, pending, failing with the last error) and lag (records received but not
// yet delivered, and how long the oldest has waited). A form adds a sink (the secret is a
// password field, sent once to the API and never shown again); a button deletes one.
import { type PageContext, type PageResult, page, redirect } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { html, path } from "../html.ts";
import { badge, code, csrfInput, dataTable, field, section, selectField, shell, time } from "../layout.ts";
import { joinErrors, list, problemText } from "./shared.ts";
import type { Sink as SinkView } from "../../../contract/admin-api.ts";

const KIND_LABEL: Record<string, string> = { webhook: "HTTPS webhook (Splunk HEC)", syslog: "syslog over TLS", otlp: "OTLP/HTTP logs" };

function status(s: SinkView) {
  if (s.health.status === "ok") return badge("ok", "ok");
  if (s.health.status === "pending") return badge("pending", "muted");
  return badge(`failing (${s.health.failures})`, "bad");
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
  <td>${KIND_LABEL[s.kind] ?? s.kind}<br>${code(s.endpoint)}${s.include_ciphertext ? html`<br><span class="muted">with ciphertext</span>` : ""}</td>
  <td data-status>${status(s)}</td>
  <td data-delivered>${s.health.delivered}</td>
  <td data-lag>${s.health.lag_records}${s.health.lag_records_capped ? "+" : ""} records<br><span class="muted">${s.health.lag_seconds} s behind</span></td>
  <td>${time(s.health.last_success_at)}</td>
  <td><form method="post" action="${path`/siem-sinks/${s.id}/delete`}">${csrfInput(ctx.session.csrfToken)}<button type="submit" class="btn btn-small btn-secondary" aria-label="Delete sink ${s.name}">Delete</button></form></td>
  <td data-last-error>${s.health.last_error ? html`${time(s.health.last_error_at)}<br><span class="muted">${s.health.last_error}</span>${s.health.next_attempt_at ? html`<br><span class="muted">next try ${time(s.health.next_attempt_at)}</span>` : ""}` : html`<span class="muted">none</span>`}</td>
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
        dataTable("SIEM sinks", ["Sink", "Kind and endpoint", "Status", "Delivered", "Lag", "Last success", "", "Last error"], rows, "No sinks. Create one with svc audit sinks create."),
      )}${section("Add a sink", form(ctx.session.csrfToken, v))}`,
    }),
    state.status ?? 200,
  );
}

function form(csrf: string, v: Record<string, string>) {
  return html`<form method="post" action="/siem-sinks" class="stack">
  ${csrfInput(csrf)}
  ${field({ label: "Name", name: "name", value: v.name, required: true, placeholder: "splunk" })}
  ${selectField({ label: "Kind", name: "kind", value: v.kind ?? "webhook", required: true, options: Object.entries(KIND_LABEL).map(([value, label]) => ({ value, label })) })}
  ${field({ label: "Endpoint", name: "endpoint", value: v.endpoint, required: true, placeholder: "https://siem.example.com:8088/services/collector/event", hint: html`webhook and OTLP: an <code>https://</code> URL; syslog: <code>host:port</code> of the TLS listener.` })}
  ${field({ label: "Secret", name: "secret", type: "password", autocomplete: "new-password", hint: "webhook: the HMAC-SHA256 key (16+ characters, required); OTLP: a bearer token; syslog: none. Never shown again." })}
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
    include_ciphertext: f.include_ciphertext === "on",
    backfill: f.backfill === "on",
  };
  const res = await ctx.api.send("POST", ctx.api.org("/siem-sinks"), body);
  // The form comes back filled, but never with the secret.
  if (!res.ok) return getSiemSinks(pc, { error: problemText(res.problem), values: { ...f, secret: "" }, status: res.problem.status });
  return redirect("/siem-sinks?done=created");
}

export async function postDeleteSiemSink(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const res = await ctx.api.send("DELETE", ctx.api.org(path`/siem-sinks/${ctx.params.id ?? ""}`));
  if (!res.ok) return getSiemSinks(pc, { error: problemText(res.problem), status: res.problem.status });
  return redirect("/siem-sinks?done=deleted");
}
