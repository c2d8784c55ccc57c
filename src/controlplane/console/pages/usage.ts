// Usage (issue 16): model tokens per user and per model over the last 14 days as stacked bar
// charts (inline SVG, no script), the totals behind them, and each budget's status. The data
// comes from the same admin API `svc usage` and `svc budgets list` use.
import type { Budget, UsagePoint, UsageRow } from "../../../contract/admin-api.ts";
import { type PageContext, type PageResult, page } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { html, type SafeHtml } from "../html.ts";
import { badge, code, dataTable, shell, type Tone } from "../layout.ts";
import { joinErrors, list } from "./shared.ts";

type Point = UsagePoint;
type Row = UsageRow;

const DAYS = 14;
const SERIES = 6; // the largest keys get a colour each; the rest is "other"
/** Series j is drawn in class series-j (assets/console.css: .series-0 … .series-6, "other" last); no inline styles under the console's CSP. */
const seriesClass = (j: number) => `series-${Math.min(j, SERIES)}`;

/** A stacked bar chart of tokens per UTC day, one colour per key. */
export function usageChart(title: string, points: Point[], labelOf: (key: string | null) => string, now: number): SafeHtml {
  const start = Math.floor(now / 86_400_000) - (DAYS - 1);
  const days = Array.from({ length: DAYS }, (_, i) => new Date((start + i) * 86_400_000).toISOString().slice(0, 10));
  const totals = new Map<string, number>();
  for (const p of points) totals.set(String(p.key), (totals.get(String(p.key)) ?? 0) + p.total_tokens);
  const top = [...totals.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, SERIES)
    .map(([k]) => k);
  const series = [...top, ...(totals.size > top.length ? ["(other)"] : [])];
  const grid = new Map<string, number>(); // day|series → tokens
  for (const p of points) {
    const s = top.includes(String(p.key)) ? String(p.key) : "(other)";
    const k = `${p.bucket.slice(0, 10)}|${s}`;
    grid.set(k, (grid.get(k) ?? 0) + p.total_tokens);
  }
  const dayTotal = days.map((d) => series.reduce((n, s) => n + (grid.get(`${d}|${s}`) ?? 0), 0));
  const max = Math.max(1, ...dayTotal);
  const W = 640;
  const H = 180;
  const bar = W / DAYS;
  const name = (s: string) => (s === "(other)" ? "other" : labelOf(s === "null" ? null : s));
  const bars = days.map((d, i) => {
    let y = H;
    return series.map((s, j) => {
      const v = grid.get(`${d}|${s}`) ?? 0;
      if (v === 0) return html``;
      const h = (v / max) * (H - 10);
      y -= h;
      return html`<rect class="${seriesClass(j)}" x="${(i * bar + 2).toFixed(1)}" y="${y.toFixed(1)}" width="${(bar - 4).toFixed(1)}" height="${h.toFixed(1)}"><title>${d} ${name(s)}: ${v} tokens</title></rect>`;
    });
  });
  return html`<figure class="chart">
<figcaption><strong>${title}</strong> <span class="muted">tokens per UTC day, last ${DAYS} days (peak ${max})</span></figcaption>
<svg viewBox="0 0 ${W} ${H + 16}" width="100%" role="img" aria-label="${title}">
${bars}
<text x="0" y="${H + 13}" font-size="10" fill="currentColor">${days[0]!}</text>
<text x="${W}" y="${H + 13}" font-size="10" text-anchor="end" fill="currentColor">${days.at(-1)!}</text>
</svg>
<ul class="legend">${series.map((s, j) => html`<li><span class="swatch ${seriesClass(j)}" aria-hidden="true"></span> ${name(s)} (${totals.get(s) ?? [...totals.entries()].filter(([k]) => !top.includes(k)).reduce((n, [, v]) => n + v, 0)})</li>`)}</ul>
</figure>`;
}

function amount(unit: string, v: number): string {
  return unit === "tokens" ? String(Math.round(v)) : (Math.round(v * 10_000) / 10_000).toString();
}

export function budgetRows(budgets: Budget[]): SafeHtml[] {
  return budgets.map((b) => {
    const pct = Math.floor(b.used * 100);
    const tone: Tone = b.used >= 1 ? "bad" : b.used >= 0.8 ? "warn" : "ok";
    return html`<tr>
  <td><strong>${b.name}</strong><br><span class="muted mono">${b.id}</span></td>
  <td>${b.scope} ${code(b.target)}</td>
  <td>${b.period}</td>
  <td>${amount(b.unit, b.spent)} / ${amount(b.unit, b.limit)} ${b.unit === "tokens" ? "tokens" : ""}<br><meter min="0" max="1" low="0.8" high="0.999" optimum="0" value="${Math.min(1, b.used)}">${pct} %</meter></td>
  <td>${badge(b.used >= 1 ? `used up (${pct} %)` : `${pct} %`, tone)}</td>
  <td class="mono">${b.resets_at}</td>
</tr>`;
  });
}

export async function getUsage(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const since = `${DAYS}d`;
  const [byUser, byModel, users, models, budgets] = await Promise.all([
    list<Point>(ctx, `/usage/series?by=user&bucket=day&since=${since}`, "points", errors),
    list<Point>(ctx, `/usage/series?by=model&bucket=day&since=${since}`, "points", errors),
    list<Row>(ctx, `/usage?by=user&since=${since}`, "rows", errors),
    list<Row>(ctx, `/usage?by=model&since=${since}`, "rows", errors),
    list<Budget>(ctx, "/budgets", "budgets", errors),
  ]);
  const email = new Map(users.map((u) => [String(u.key), u.label ?? String(u.key)]));
  const now = Date.now();
  const totalsTable = (caption: string, first: string, rows: Row[], label: (r: Row) => string) =>
    dataTable(
      caption,
      [first, "Calls", "Prompt", "Completion", "Total", "Cost"],
      rows.map((r) => html`<tr><td>${label(r)}</td><td>${r.calls}</td><td>${r.prompt_tokens}</td><td>${r.completion_tokens}</td><td>${r.total_tokens}</td><td>${r.cost.toFixed(4)}</td></tr>`),
      "No model calls in this period.",
    );
  return page(
    shell(ctx.session, {
      title: "Usage",
      active: "usage",
      lead: html`Model tokens and cost from the providers' own counts, summed across every installation (also <code>svc usage</code>). Budgets are managed with <code>svc budgets</code>.`,
      error: joinErrors(errors),
      body: html`<section aria-labelledby="budgets-h"><h2 id="budgets-h">Budgets</h2>
${dataTable("Budgets", ["Budget", "Scope", "Period", "Spent", "Status", "Resets"], budgetRows(budgets), "No budgets. Create one with svc budgets create.")}</section>
<section aria-labelledby="charts-h"><h2 id="charts-h">Over time</h2>
${usageChart("Per user", byUser, (k) => (k === null ? "(installation)" : (email.get(k) ?? k)), now)}
${usageChart("Per model", byModel, (k) => k ?? "(none)", now)}</section>
<section aria-labelledby="totals-h"><h2 id="totals-h">Last ${DAYS} days</h2>
${totalsTable("Per user", "User", users, (r) => r.label ?? r.key ?? "-")}
${totalsTable("Per model", "Model", models, (r) => r.key ?? "-")}</section>`,
    }),
  );
}
