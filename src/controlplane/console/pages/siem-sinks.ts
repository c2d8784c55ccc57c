// SIEM sinks (issue 15): where the organization's audit records are streamed, each with its
// delivery health (ok, pending, failing with the last error) and lag (records received but not
// yet delivered, and how long the oldest has waited). Sinks are created and deleted with
// `svc audit sinks` or the API (docs/siem.md); the page shows them.
import { type PageContext, type PageResult, page } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { html } from "../html.ts";
import { badge, code, dataTable, section, shell, time } from "../layout.ts";
import { joinErrors, list } from "./shared.ts";
import type { SinkView } from "../../sinks/service.ts";

const KIND_LABEL: Record<string, string> = { webhook: "HTTPS webhook (Splunk HEC)", syslog: "syslog over TLS", otlp: "OTLP/HTTP logs" };

function status(s: SinkView) {
  if (s.health.status === "ok") return badge("ok", "ok");
  if (s.health.status === "pending") return badge("pending", "muted");
  return badge(`failing (${s.health.failures})`, "bad");
}

export async function getSiemSinks(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
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
      error: joinErrors(errors),
      body: html`${banner}${section(
        "Sinks",
        dataTable("SIEM sinks", ["Sink", "Kind and endpoint", "Status", "Delivered", "Lag", "Last success", "Last error"], rows, "No sinks. Create one with svc audit sinks create."),
      )}${section("Add or remove a sink", html`<p>With the CLI: <code>svc audit sinks create</code> (the webhook's HMAC key is read from stdin), <code>svc audit sinks delete &lt;name&gt;</code>. See docs/siem.md.</p>`)}`,
    }),
  );
}
