// Installations: the list, and one installation with its proxies (replicas) and registered tools.
// Installations are created with `svc bot init`; the console shows them.
import type { InstalledTool } from "../../../contract/admin-api.ts";
import { type PageContext, type PageResult, page } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { html, path } from "../html.ts";
import { badge, code, dataTable, section, shell, time } from "../layout.ts";
import { type Installation, latestReplica, skewCell, spoolBadge, spoolDepthCell, stateBadge } from "./overview.ts";
import { type Agent, type Workspace, byId, joinErrors, list, named } from "./shared.ts";
import { runtimeStateBadge } from "./tool-servers.ts";

type Tool = InstalledTool;

export async function getInstallations(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const [installations, agents, workspaces] = await Promise.all([
    list<Installation>(ctx, "/installations", "installations", errors),
    list<Agent>(ctx, "/agents", "agents", errors),
    list<Workspace>(ctx, "/workspaces", "workspaces", errors),
  ]);
  const agentMap = byId(agents);
  const wsMap = byId(workspaces);
  const rows = installations.map(
    (i) => html`<tr>
  <td><a href="${path`/installations/${i.id}`}">${i.name}</a><br><span class="muted mono">${i.id}</span></td>
  <td>${badge(i.platform, "info")}</td>
  <td>${named(agentMap, i.agent_id)}</td>
  <td>${named(wsMap, i.workspace_id)}</td>
  <td>${i.tool_count}</td>
  <td>${i.has_credential === false ? badge("not issued", "warn") : badge("issued", "ok")}</td>
  <td>${time(i.created_at)}</td>
</tr>`,
  );
  return page(
    shell(ctx.session, {
      title: "Installations",
      active: "installations",
      lead: html`An installation is one deployed chat front end. Create one with <code>svc bot init --platform chatui --name &lt;name&gt; --agent &lt;agent_id&gt; --workspace &lt;workspace&gt;</code>.`,
      error: joinErrors(errors),
      body: dataTable("Installations", ["Installation", "Platform", "Agent", "Workspace", "Tools", "Runtime token", "Created"], rows, "No installations yet."),
    }),
  );
}

export async function getInstallation(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const id = ctx.params.id ?? "";
  const errors: string[] = [];
  const got = await ctx.api.get<Installation>(ctx.api.org(path`/installations/${id}`));
  if (!got.ok) {
    return page(
      shell(ctx.session, { title: "Installation", active: "installations", error: got.problem.detail, body: html`<p><a href="/installations">All installations</a></p>` }),
      got.problem.status,
    );
  }
  const inst = got.data;
  const [tools, agents] = await Promise.all([list<Tool>(ctx, path`/installations/${id}/tools`, "tools", errors), list<Agent>(ctx, "/agents", "agents", errors)]);
  const r = latestReplica(inst.replicas);
  const replicaRows = (inst.replicas ?? []).map(
    (x) => html`<tr>
  <td>${code(x.id)}${x.hostname ? html`<br><span class="muted">${x.hostname}</span>` : ""}</td>
  <td>${stateBadge(x.state)}${spoolBadge(x)}${x.liveness && x.liveness !== "live" ? html`<br><span class="muted">not heard from since ${time(x.last_seen_at)}</span>` : ""}</td>
  <td>${time(x.last_heartbeat_at)}</td>
  <td>${x.policy_revision ?? "—"}</td>
  <td>${x.tool_count ?? "—"}</td>
  <td>${spoolDepthCell(x)}</td>
  <td>${skewCell(x.clock_skew_ms)}</td>
  <td>${x.tool_servers?.length ? x.tool_servers.map((t) => html`${code(t.name)} ${runtimeStateBadge(t)}${t.error ? html`<br><span class="muted">${t.error}</span>` : ""}<br>`) : html`<span class="muted">—</span>`}</td>
  <td>${x.version ?? "—"}</td>
</tr>`,
  );
  const toolRows = tools.map(
    (t) =>
      html`<tr><td>${code(t.name)}</td><td>${badge(t.access, t.access === "write" ? "warn" : "muted")}</td><td>${(t.required_capabilities ?? []).join(", ") || html`<span class="muted">—</span>`}</td></tr>`,
  );
  return page(
    shell(ctx.session, {
      title: inst.name,
      active: "installations",
      error: joinErrors(errors),
      body: html`<section class="panel" aria-labelledby="inst-h"><h2 id="inst-h">Installation</h2>
<dl class="props">
  <dt>Id</dt><dd>${code(inst.id)}</dd>
  <dt>Platform</dt><dd>${inst.platform}</dd>
  <dt>Agent</dt><dd>${named(byId(agents), inst.agent_id)}</dd>
  <dt>Proxy state</dt><dd>${stateBadge(r?.state)}${spoolBadge(r)}</dd>
  <dt>Last heartbeat</dt><dd>${time(r?.last_heartbeat_at)}</dd>
  <dt>Registered tools</dt><dd>${inst.tool_count}</dd>
</dl></section>
${section("Proxies", dataTable("Proxies", ["Replica", "State", "Last heartbeat", "Policy revision", "Tools", "Spool depth", "Clock skew", "MCP servers", "Version"], replicaRows, "No proxy has bootstrapped with this installation's token yet."))}
${section("Registered tools", dataTable("Registered tools", ["Tool", "Access", "Capabilities"], toolRows, "No tools registered; the container's tool sync registers them."))}`,
    }),
  );
}
