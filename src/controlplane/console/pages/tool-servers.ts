// MCP tool servers (issue 13): the list with each server's readiness, and one server with its
// assignment, its tool rules, what each live runtime replica last reported about it (an
// unreachable server serves no tools) and the tools they listed, served or why not (issue 31). Created and assigned with `svc tool-servers`.
// The response types are the admin API's contract (src/contract/admin-settings.ts).
import { type PageContext, type PageResult, page } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { html, path, type SafeHtml } from "../html.ts";
import { badge, code, dataTable, section, shell, time } from "../layout.ts";
import type { ToolServerDetail, ToolServerReadiness } from "../../../contract/admin-api.ts";
import { type Agent, type Workspace, byId, joinErrors, list, named, readinessCell } from "./shared.ts";

type Server = ToolServerDetail;
type Readiness = ToolServerReadiness;
type RuntimeStatus = ToolServerReadiness["runtimes"][number];

/** Where the server runs: its URL (http) or its command line (stdio). */
export function endpointCell(s: Pick<Server, "transport" | "url" | "command" | "args">): SafeHtml {
  return s.transport === "http" ? html`${badge("http", "info")} ${code(s.url)}` : html`${badge("stdio", "muted")} ${code([s.command ?? "", ...s.args].join(" "))}`;
}

function secretsCell(s: Server): SafeHtml {
  if (!s.has_secrets) return html`<span class="muted">none</span>`;
  return html`${s.secret_names.map((n) => code(n))} ${badge(`sealed to ${s.sealed_to.length}`, "ok")}`;
}

export function runtimeStateBadge(r: Pick<RuntimeStatus, "state" | "tool_count">): SafeHtml {
  if (r.state === "ok") return badge(`reachable, ${r.tool_count ?? 0} tool(s)`, "ok");
  if (r.state === "unreachable") return badge("unreachable: serves no tools", "bad");
  return badge("not reported yet", "warn");
}

/** A tool the runtimes listed (issue 31): governed and upstream names, access, served or why not (a skipped tool has no governed name). */
function toolRow(t: NonNullable<Server["tools"]>[number]): SafeHtml {
  return html`<tr>
  <td>${t.name ? code(t.name) : html`<span class="muted">none</span>`}</td>
  <td>${code(t.upstream)}</td>
  <td>${badge(t.access, t.access === "write" ? "warn" : "muted")}</td>
  <td>${t.served ? badge("served", "ok") : html`${badge("not served", "bad")} <span class="muted">${t.why ?? ""}</span>`}</td>
</tr>`;
}

export async function getToolServers(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const [servers, workspaces] = await Promise.all([list<Server>(ctx, "/tool-servers", "tool_servers", errors), list<Workspace>(ctx, "/workspaces", "workspaces", errors)]);
  const readiness = await Promise.all(
    servers.map(async (s) => {
      const got = await ctx.api.get<Readiness>(ctx.api.org(path`/tool-servers/${s.id}/readiness`));
      return got.ok ? got.data : { error: got.problem.detail };
    }),
  );
  const wsMap = byId(workspaces);
  const rows = servers.map(
    (s, i) => html`<tr>
  <td><a href="${path`/tool-servers/${s.id}`}"><strong>${s.name}</strong></a><br><span class="muted mono">${s.id}</span></td>
  <td>${endpointCell(s)}</td>
  <td>${secretsCell(s)}</td>
  <td>${named(wsMap, s.workspace_id)}</td>
  <td>${readinessCell(readiness[i]!)}</td>
</tr>`,
  );
  return page(
    shell(ctx.session, {
      title: "Tool servers",
      active: "tool-servers",
      lead: html`An MCP tool server's tools are served to an agent's users as <code>&lt;server&gt;.&lt;tool&gt;</code> and governed by policies on <code>tool:&lt;server&gt;.&lt;tool&gt;</code>. Create and assign with <code>svc tool-servers create</code> and <code>svc tool-servers assign</code>.`,
      error: joinErrors(errors),
      body: dataTable("Tool servers", ["Server", "Endpoint", "Secrets", "Workspace", "Readiness"], rows, "No tool servers yet."),
    }),
  );
}

export async function getToolServer(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  // A malformed escape in the URL gives no id (the router's decoding failed): no such server.
  const id = ctx.params.id ?? "";
  const got = id ? await ctx.api.get<Server>(ctx.api.org(path`/tool-servers/${id}`)) : ({ ok: false, problem: { status: 404, detail: "no such tool server" } } as const);
  if (!got.ok) {
    return page(shell(ctx.session, { title: "Tool server", active: "tool-servers", error: got.problem.detail, body: html`<p><a href="/tool-servers">All tool servers</a></p>` }), got.problem.status);
  }
  const s = got.data;
  const errors: string[] = [];
  const [agents, readiness] = await Promise.all([list<Agent>(ctx, "/agents", "agents", errors), ctx.api.get<Readiness>(ctx.api.org(path`/tool-servers/${s.id}/readiness`))]);
  if (!readiness.ok) errors.push(readiness.problem.detail);
  const agentMap = byId(agents);
  const overrides = Object.entries(s.access_overrides);
  const runtimeRows = (readiness.ok ? readiness.data.runtimes : []).map(
    (r) => html`<tr>
  <td>${code(r.replica_id)}</td>
  <td><a href="${path`/installations/${r.installation_id}`}">${r.installation_id}</a></td>
  <td>${runtimeStateBadge(r)}${r.error ? html`<br><span class="muted">${r.error}</span>` : ""}</td>
  <td>${time(r.last_heartbeat_at)}</td>
</tr>`,
  );
  return page(
    shell(ctx.session, {
      title: s.name,
      active: "tool-servers",
      error: joinErrors(errors),
      body: html`<section class="panel" aria-labelledby="ts-h"><h2 id="ts-h">Tool server</h2>
<dl class="props">
  <dt>Id</dt><dd>${code(s.id)}</dd>
  <dt>Governed as</dt><dd>${code(`tool:${s.name}.<tool>`)}</dd>
  <dt>Endpoint</dt><dd>${endpointCell(s)}</dd>
  <dt>Secrets</dt><dd>${secretsCell(s)}</dd>
  ${s.transport === "http" ? html`<dt>Identity assertion</dt><dd>${s.assertion ? html`signed JWT in ${code(s.assertion.header)}, audience ${code(s.assertion.audience)}` : html`<span class="muted">none</span>`}</dd>` : ""}
  <dt>Tools served</dt><dd>${s.allowed_tools ? s.allowed_tools.map((t) => code(t)) : "every tool the server lists"}</dd>
  <dt>Access overrides</dt><dd>${overrides.length ? overrides.map(([t, a]) => html`${code(t)} ${badge(a, a === "write" ? "warn" : "muted")} `) : html`<span class="muted">none: read when the tool says readOnlyHint, else write</span>`}</dd>
  <dt>Assigned to</dt><dd>${(s.assigned_agents ?? []).length ? (s.assigned_agents ?? []).map((a) => html`${named(agentMap, a)} `) : html`<span class="muted">no agent: run <code>svc tool-servers assign ${s.name} --agent &lt;agent_id&gt;</code></span>`}</dd>
  <dt>Readiness</dt><dd>${readiness.ok ? readinessCell(readiness.data) : badge("unknown", "muted")}</dd>
</dl></section>
${section("Runtime status", dataTable("Runtime status", ["Replica", "Installation", "Server", "Last heartbeat"], runtimeRows, "No live runtime replica in scope."))}
${section("Tools", dataTable("Tools", ["Tool (policies: tool:<name>)", "Name at the server", "Access", "Served"], (s.tools ?? []).map(toolRow), "No tools listed yet: the agent's runtimes list them once the server is assigned and they reach it."))}`,
    }),
  );
}
