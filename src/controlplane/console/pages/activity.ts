// The overview's audit activity (issue 15): decisions per hour over the last 24 hours as a
// stacked bar chart (permits and denies; inline SVG, no script), and the most called tools and
// the most active users, each linked to the audit records behind the figure.
import type { Activity } from "../../../contract/admin-api.ts";
import { html, query, type SafeHtml } from "../html.ts";
import { code, dataTable } from "../layout.ts";

export type { Activity } from "../../../contract/admin-api.ts";

// Colours come from the stylesheet by class (.bar-permit, .swatch-permit, …): the console's CSP
// (style-src 'self') blocks inline style attributes, which left the legend without its colours.

/** Decisions per hour, permits under denies. Pure. */
export function hourlyChart(hours: Activity["hours"]): SafeHtml {
  const W = 640;
  const H = 140;
  const max = Math.max(1, ...hours.map((h) => h.permit + h.deny));
  const bar = W / Math.max(1, hours.length);
  const label = (iso: string) => `${iso.slice(0, 13).replace("T", " ")}:00 UTC`;
  const bars = hours.map((h, i) => {
    const x = (i * bar + 1).toFixed(1);
    const w = Math.max(1, bar - 2).toFixed(1);
    const ph = (h.permit / max) * (H - 8);
    const dh = (h.deny / max) * (H - 8);
    return html`<g><title>${label(h.hour)}: ${h.permit} permitted, ${h.deny} denied</title>${
      h.permit ? html`<rect class="bar-permit" x="${x}" y="${(H - ph).toFixed(1)}" width="${w}" height="${ph.toFixed(1)}"></rect>` : ""
    }${h.deny ? html`<rect class="bar-deny" x="${x}" y="${(H - ph - dh).toFixed(1)}" width="${w}" height="${dh.toFixed(1)}"></rect>` : ""}</g>`;
  });
  const permits = hours.reduce((n, h) => n + h.permit, 0);
  const denies = hours.reduce((n, h) => n + h.deny, 0);
  return html`<figure class="chart" id="activity-chart">
<figcaption><strong>Decisions per hour</strong> <span class="muted">last ${hours.length} hours (UTC), user turns and tool calls; background tasks left out</span></figcaption>
<svg viewBox="0 0 ${W} ${H + 16}" width="100%" role="img" aria-label="Decisions per hour: ${permits} permitted, ${denies} denied">
${bars}
<text x="0" y="${H + 13}" font-size="10" fill="currentColor">${hours[0] ? label(hours[0].hour) : ""}</text>
<text x="${W}" y="${H + 13}" font-size="10" text-anchor="end" fill="currentColor">${hours.at(-1) ? label(hours.at(-1)!.hour) : ""}</text>
</svg>
<ul class="legend"><li><span class="swatch swatch-permit" aria-hidden="true"></span> permitted (<span data-figure="permits">${permits}</span>)</li><li><span class="swatch swatch-deny" aria-hidden="true"></span> denied (<span data-figure="denies">${denies}</span>)</li></ul>
</figure>`;
}

/** The chart and the two top lists, each row linking to its records. Pure. */
export function activitySection(a: Activity): SafeHtml {
  const since = a.since;
  const tools = a.top_tools.map((t) => html`<tr><td><a href="/audit${query({ tool: t.tool, from: since.slice(0, 16) })}">${code(t.tool)}</a></td><td>${t.calls}</td><td>${t.denied}</td></tr>`);
  const users = a.top_users.map(
    (u) => html`<tr><td><a href="/audit${query({ user: u.user_id, from: since.slice(0, 16) })}">${u.email ?? u.user_id}</a></td><td>${u.calls}</td><td>${u.denied}</td></tr>`,
  );
  return html`${hourlyChart(a.hours)}
<div class="grid-2">
<div><h3>Top tools</h3>${dataTable("Top tools", ["Tool", "Calls", "Denied"], tools, "No tool calls in the last 24 hours.")}</div>
<div><h3>Top users</h3>${dataTable("Top users", ["User", "Decisions", "Denied"], users, "No decisions of signed-in users in the last 24 hours.")}</div>
</div>`;
}
