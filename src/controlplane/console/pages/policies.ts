// Policies: the list (with the agent each is bound to, its condition and mode, and a link to its
// recent decisions), creating one with a CEL condition and enforce/shadow mode, and what the
// shadow policies would have changed in recent decisions (issue 17).
import { type PageContext, type PageResult, page, redirect } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { type SafeHtml, html, path, query } from "../html.ts";
import { badge, code, csrfInput, dataTable, field, section, selectField, shell, time } from "../layout.ts";
import type { Policy } from "../../../contract/admin-api.ts";
import type { AuditRecordView } from "./audit.ts";
import { type Agent, type Workspace, byId, joinErrors, list, named, problemText } from "./shared.ts";


const SHADOW_ROWS = 20;

/** Recent calls whose outcome a shadow policy would have changed: what was enforced, what would have been. */
export function shadowChanges(records: AuditRecordView[], policies: ReadonlyMap<string, { name: string }>): SafeHtml {
  const name = (id: string | null | undefined) => (id ? (policies.get(id)?.name ?? id) : "no policy");
  const rows = records.map(
    (r) => html`<tr>
  <td>${time(r.ts)}<br><span class="muted mono small">${r.id}</span></td>
  <td>${code(r.tool_name ?? r.action)}</td>
  <td>${r.subject.email ?? r.subject.user_id ?? html`<span class="muted">via installation</span>`}</td>
  <td>${badge(r.decision, r.decision === "permit" ? "ok" : "bad")}<br><span class="muted">${name(r.policy_id)}</span></td>
  <td>${badge(`would ${r.shadow?.decision ?? "?"}`, "warn")}<br><span class="muted">${name(r.shadow?.policy_id)}</span></td>
</tr>`,
  );
  return dataTable("Shadow changes", ["Time", "Tool or action", "User", "Enforced", "With shadow policies"], rows, "No recent call would have been decided differently by the shadow policies.");
}
type FormState = { error?: string | null; values?: Record<string, string>; status?: number; notice?: string | null };

const NOTICES: Record<string, string> = { created: "Policy created.", updated: "Policy saved.", deleted: "Policy deleted." };

export async function getPolicies(pc: PageContext, state: FormState = {}): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const [policies, agents, workspaces, shadowed] = await Promise.all([
    list<Policy>(ctx, "/policies", "policies", errors),
    list<Agent>(ctx, "/agents", "agents", errors),
    list<Workspace>(ctx, "/workspaces", "workspaces", errors),
    ctx.api.get<{ records: AuditRecordView[] }>(ctx.api.org(`/audit-records${query({ shadow: "changed", limit: SHADOW_ROWS })}`)),
  ]);
  if (!shadowed.ok) errors.push(shadowed.problem.detail);
  const policyMap = new Map(policies.map((p) => [p.id, p]));
  const agentMap = byId(agents);
  const wsMap = byId(workspaces);
  const v = state.values ?? {};
  const rows = policies.map(
    (p) => html`<tr id="${p.id}">
  <td><strong>${p.name}</strong><br><span class="muted mono">${p.id}</span></td>
  <td>${code(p.src)}</td>
  <td>${code(p.dst)}</td>
  <td>${badge(p.effect, p.effect === "permit" ? "ok" : "warn")}${p.mode === "shadow" ? html`<br>${badge("shadow", "info")}` : ""}</td>
  <td>${p.condition ? code(p.condition) : html`<span class="muted">always</span>`}</td>
  <td>${p.agent_id ? named(agentMap, p.agent_id) : html`<span class="muted">any agent</span>`}</td>
  <td>${named(wsMap, p.workspace_id)}</td>
  <td><a href="/audit${query({ policy: p.id })}">Recent decisions<span class="visually-hidden"> of ${p.name}</span></a></td>
  <td><a class="btn btn-small btn-secondary" href="${path`/policies/${p.id}/edit`}" aria-label="Edit policy ${p.name}">Edit</a> <form class="inline-form" method="post" action="${path`/policies/${p.id}/delete`}">${csrfInput(ctx.session.csrfToken)}<button type="submit" class="btn btn-small btn-secondary" aria-label="Delete policy ${p.name}">Delete</button></form></td>
</tr>`,
  );
  const form = html`<form method="post" action="/policies" class="stack">
  ${csrfInput(ctx.session.csrfToken)}
  ${field({ label: "Name", name: "name", value: v.name, required: true })}
  ${field({ label: "Who (source)", name: "src", value: v.src, required: true, placeholder: "group:support", hint: html`<code>user:usr_…</code> (a service user id, see Users), <code>group:&lt;name&gt;</code> or <code>*</code>` })}
  ${field({ label: "What (destination)", name: "dst", value: v.dst, required: true, placeholder: "tool:crm.lookup", hint: html`<code>model:invoke</code> or <code>tool:&lt;name&gt;</code>, the tool's declared name exactly` })}
  ${selectField({ label: "Workspace", name: "workspace", required: true, value: v.workspace ?? workspaces.find((w) => w.name === "default")?.id ?? "", options: workspaces.map((w) => ({ value: w.id, label: w.name })) })}
  ${selectField({ label: "Agent", name: "agent_id", value: v.agent_id ?? "", options: [{ value: "", label: "— not bound to one agent —" }, ...agents.map((a) => ({ value: a.id, label: `${a.name} (${a.id})` }))] })}
  ${selectField({ label: "Effect", name: "effect", required: true, value: v.effect ?? "permit", options: [{ value: "permit", label: "permit" }, { value: "deny", label: "deny (overrides permits)" }] })}
  ${field({ label: "Condition", name: "condition", value: v.condition, placeholder: "args.amount <= 500", hint: html`CEL over <code>args</code>, <code>user</code> (<code>id</code>, <code>email</code>, <code>groups</code>, <code>attributes</code>) and <code>now</code>, e.g. <code>now.getHours('Europe/Berlin') &lt; 18</code>. Leave empty to apply always.` })}
  ${selectField({ label: "Mode", name: "mode", required: true, value: v.mode ?? "enforce", options: [{ value: "enforce", label: "enforce" }, { value: "shadow", label: "shadow: record what it would decide, change nothing" }] })}
  <p class="hint">Without a permit, calls are denied.</p>
  <div class="actions"><button type="submit" class="btn">Create policy</button></div>
</form>`;
  const done = ctx.url.searchParams.get("done");
  return page(
    shell(ctx.session, {
      title: "Policies",
      active: "policies",
      lead: "Policy alone decides: a call is permitted only when a policy permits it for the user or one of their groups.",
      notice: state.notice ?? (done ? (NOTICES[done] ?? null) : null),
      error: state.error ?? joinErrors(errors),
      body: html`${section("All policies", dataTable("Policies", ["Policy", "Who", "What", "Effect", "Condition", "Agent", "Workspace", "Decisions", ""], rows, "No policies yet: every call is denied."))}
${section("What shadow policies would have changed", shadowChanges(shadowed.ok ? (shadowed.data.records ?? []) : [], policyMap))}
${section("Create a policy", form)}`,
    }),
    state.status ?? 200,
  );
}

export async function postPolicy(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const f = ctx.form;
  const res = await ctx.api.send<Policy>("POST", ctx.api.org("/policies"), {
    name: (f.name ?? "").trim(),
    src: (f.src ?? "").trim(),
    dst: (f.dst ?? "").trim(),
    effect: f.effect === "deny" ? "deny" : "permit",
    workspace: f.workspace ?? "",
    ...(f.agent_id ? { agent_id: f.agent_id } : {}),
    ...((f.condition ?? "").trim() ? { condition: (f.condition ?? "").trim() } : {}),
    mode: f.mode === "shadow" ? "shadow" : "enforce",
  });
  if (!res.ok) return getPolicies(pc, { error: problemText(res.problem), values: f, status: res.problem.status });
  return redirect("/policies?done=created");
}

export async function postPolicyDelete(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const res = await ctx.api.send("DELETE", ctx.api.org(path`/policies/${ctx.params.id ?? ""}`));
  if (!res.ok) return getPolicies(pc, { error: problemText(res.problem), status: res.problem.status });
  return redirect("/policies?done=deleted");
}
