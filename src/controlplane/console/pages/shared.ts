// Lookups several admin pages share: workspaces and agents (for selects and for showing names
// next to ids), and flash notices keyed by a short word in the query string.
import type { ApiProblem } from "../api-client.ts";
import type { AdminContext } from "../context.ts";
import { html, type SafeHtml } from "../html.ts";
import { badge, code } from "../layout.ts";

export type { Readiness, Workspace } from "../../../contract/admin-api.ts";
import type { Readiness } from "../../../contract/admin-api.ts";
export type { Agent } from "../../../contract/admin-api.ts";

/** Lists `key` from a GET, collecting the problem detail instead of throwing. */
export async function list<T>(ctx: AdminContext, apiPath: string, key: string, errors: string[]): Promise<T[]> {
  const got = await ctx.api.get<Record<string, T[]>>(ctx.api.org(apiPath));
  if (!got.ok) {
    errors.push(got.problem.detail);
    return [];
  }
  const items = got.data?.[key];
  return Array.isArray(items) ? items : [];
}

export function byId<T extends { id: string }>(items: T[]): Map<string, T> {
  return new Map(items.map((i) => [i.id, i]));
}

/** A related item's name (its id in the tooltip), or the bare id when the name is unknown. */
export function named(map: Map<string, { name: string }>, id: string | null | undefined): SafeHtml {
  if (!id) return html`<span class="muted">—</span>`;
  const item = map.get(id);
  return item ? html`<span title="${id}">${item.name}</span>` : code(id);
}

/** The problem's detail, plus any per-field messages it does not already say. */
export function problemText(p: ApiProblem): string {
  const extra = (p.errors ?? []).filter((e) => !p.detail.includes(e.message)).map((e) => `${e.path}: ${e.message}`);
  return extra.length ? `${p.detail} (${extra.join("; ")})` : p.detail;
}

export function joinErrors(errors: string[]): string | null {
  const unique = [...new Set(errors)];
  return unique.length ? unique.join(" · ") : null;
}

/** A readiness answer (model profile, tool server) as a badge and its checks, or why it is unknown. */
export function readinessCell(r: Readiness | { error: string }): SafeHtml {
  if ("error" in r) return html`${badge("unknown", "muted")}<p class="hint">${r.error}</p>`;
  return html`${r.ready ? badge("ready", "ok") : badge("not ready", "bad")}
<ul class="checks">${r.checks.map((c) => html`<li>${c.ok ? "✓" : "✗"} ${c.name}${c.detail ? html`: ${c.detail}` : ""}</li>`)}</ul>`;
}
