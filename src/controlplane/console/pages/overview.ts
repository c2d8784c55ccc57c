// The overview: every installation with the state its proxies last reported (heartbeat, proxy
// state, policy revision, tool count), and the audit activity of the last 24 hours; above them
// the notices of other people's escrow recovery steps (notices.ts), what a sign-in lands on.
// Members, who have no admin pages, get a short home page.
import { type PageContext, type PageResult, isAdmin, page, requireSignedIn } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { type SafeHtml, html, path } from "../html.ts";
import { type Tone, badge, dataTable, section, shell, time } from "../layout.ts";
import { type Agent, byId, joinErrors, list, named } from "./shared.ts";
import type { Installation as AdminInstallation, InstallationStatus, Replica } from "../../../contract/admin-api.ts";
import { type Activity, activitySection } from "./activity.ts";
import { noticesArea } from "./notices.ts";
import type { Versions } from "../../../contract/admin-api.ts";
import { skewBanner, versionsSection } from "./versions.ts";

export type { Replica } from "../../../contract/admin-api.ts";
/** An installation as the list gives it, or with its replicas as its status does. */
export type Installation = AdminInstallation & Partial<Pick<InstallationStatus, "replicas">>;

const STATE_TONES: Record<string, Tone> = { ready: "ok", starting: "info", stale: "warn", unavailable: "bad", gone: "muted" };

export function stateBadge(state: string | null | undefined): SafeHtml {
  if (!state) return badge("no proxy yet", "muted");
  return badge(state, STATE_TONES[state] ?? "info");
}

/** Beside the state: a full audit spool (decisions refused) or a low one. */
export function spoolBadge(r: Pick<Replica, "spool_state"> | null | undefined): SafeHtml | "" {
  if (r?.spool_state === "full") return html` ${badge("spool full: refusing decisions", "bad")}`;
  if (r?.spool_state === "low") return html` ${badge("spool low on space", "warn")}`;
  return "";
}

/** A replica's spool depth; while it still indexed its backlog after a start, a lower bound and said so. */
export function spoolDepthCell(r: Pick<Replica, "spool_depth" | "spool_indexing">): SafeHtml | string {
  if (r.spool_depth === null) return "—";
  return r.spool_indexing ? html`at least ${r.spool_depth} ${badge("indexing backlog", "info")}` : String(r.spool_depth);
}

/** Skew past this is shown as a warning: records dated ahead of the control plane wait to ship. */
const SKEW_WARN_MS = 60_000;
/** The control plane takes records at most 15 minutes ahead of its clock (auditMaxFutureSeconds). */
const SKEW_BAD_MS = 10 * 60_000;

/** The proxy's clock against the control plane's, as the last heartbeat measured it. */
export function skewCell(ms: number | null | undefined): SafeHtml {
  if (ms === null || ms === undefined) return html`<span class="muted">—</span>`;
  const abs = Math.abs(ms);
  const text = abs < 1000 ? "in sync" : `${abs >= 60_000 ? `${(abs / 60_000).toFixed(1)} min` : `${(abs / 1000).toFixed(1)} s`} ${ms > 0 ? "ahead" : "behind"}`;
  if (abs >= SKEW_BAD_MS) return badge(text, "bad");
  if (abs >= SKEW_WARN_MS) return badge(text, "warn");
  return html`${text}`;
}

/** The replica that reported last: what the overview shows for the installation. */
export function latestReplica(replicas: Replica[] | undefined): Replica | null {
  let best: Replica | null = null;
  for (const r of replicas ?? []) if (!best || (r.last_heartbeat_at ?? "") > (best.last_heartbeat_at ?? "")) best = r;
  return best;
}

function memberHome(ctx: PageContext & { session: NonNullable<PageContext["session"]> }): PageResult {
  return page(
    shell(ctx.session, {
      title: `Welcome, ${ctx.session.principal.email}`,
      active: "none",
      body: html`<section class="panel" aria-labelledby="m-h"><h2 id="m-h">You are a member of ${ctx.session.orgName}</h2>
<p>Members sign in to link their chat account: when the assistant in the chat sends you a claim link, open it and sign in there.</p>
<p class="muted">Admin work (agents, installations, policies, audit) needs the owner or admin role.</p></section>`,
    }),
  );
}

export async function getOverview(pc: PageContext): Promise<PageResult> {
  const signed = requireSignedIn(pc);
  if (!isAdmin(signed.session)) return memberHome(signed);
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const [installations, agents, policies, keys, activity, versions] = await Promise.all([
    list<Installation>(ctx, "/installations", "installations", errors),
    list<Agent>(ctx, "/agents", "agents", errors),
    list<{ id: string }>(ctx, "/policies", "policies", errors),
    list<{ id: string; status: string }>(ctx, "/audit-encryption-keys", "keys", errors),
    ctx.api.get<Activity>(ctx.api.org("/audit-activity?since=24h")),
    ctx.api.get<Versions>(ctx.api.org("/versions")),
  ]);
  if (!activity.ok) errors.push(activity.problem.detail);
  if (!versions.ok) errors.push(versions.problem.detail);
  const notices = await noticesArea(ctx, "/");
  const detailed = await Promise.all(
    installations.map(async (i) => {
      const got = await ctx.api.get<Installation>(ctx.api.org(path`/installations/${i.id}`));
      return got.ok ? { ...i, ...got.data } : i;
    }),
  );
  const agentMap = byId(agents);
  const rows = detailed.map((i) => {
    const r = latestReplica(i.replicas);
    return html`<tr>
  <td><a href="${path`/installations/${i.id}`}">${i.name}</a><br><span class="muted mono">${i.id}</span></td>
  <td>${named(agentMap, i.agent_id)}</td>
  <td>${stateBadge(r?.state)}${spoolBadge(r)}</td>
  <td>${time(r?.last_heartbeat_at)}</td>
  <td>${r?.policy_revision ?? html`<span class="muted">—</span>`}</td>
  <td>${r?.tool_count ?? i.tool_count}</td>
  <td>${(i.replicas ?? []).length}</td>
</tr>`;
  });
  const activeKeys = keys.filter((k) => k.status === "active").length;
  const stats = html`<ul class="stats" aria-label="Summary">
  <li class="stat"><span class="stat-value">${installations.length}</span><span class="stat-label">Installations</span></li>
  <li class="stat"><span class="stat-value">${agents.length}</span><span class="stat-label">Agents</span></li>
  <li class="stat"><span class="stat-value">${policies.length}</span><span class="stat-label">Policies</span></li>
  <li class="stat"><span class="stat-value">${activeKeys}</span><span class="stat-label">Active audit keys</span></li>
</ul>`;
  const gettingStarted =
    agents.length === 0
      ? html`<div class="banner banner-info"><strong>Getting started.</strong> Create the chat agent first (<a href="/agents">Agents</a>), then the installation with <code>svc bot init --platform chatui --agent &lt;agent_id&gt;</code>.</div>`
      : "";
  return page(
    shell(ctx.session, {
      title: "Overview",
      active: "overview",
      error: joinErrors(errors),
      body: html`${notices}${versions.ok ? skewBanner(versions.data) : ""}${gettingStarted}${stats}${section(
        "Installations",
        dataTable("Installations", ["Installation", "Agent", "Proxy state", "Last heartbeat", "Policy revision", "Tools", "Replicas"], rows, "No installations yet. Create one with svc bot init."),
      )}${activity.ok ? section("Activity, last 24 hours", activitySection(activity.data)) : ""}${versions.ok ? versionsSection(versions.data) : ""}`,
    }),
  );
}
