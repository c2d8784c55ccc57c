// Policies: the list (with the agent each is bound to, its condition and mode, a link to its
// recent decisions, and a mark on a policy whose tool no installation of its workspace
// registered), creating one with a CEL condition and enforce/shadow mode (the destination
// offers the registered tools; the API's warnings are shown, never dropped), deleting one
// after a confirmation, and what the shadow policies would have changed in recent decisions
// (issue 17).
import { type AdminContext, type PageContext, type PageResult, page, redirect } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { type SafeHtml, html, path, query } from "../html.ts";
import { badge, code, csrfInput, dataTable, field, section, selectField, shell, time } from "../layout.ts";
import type { Installation, Policy, PolicyWritten } from "../../../contract/admin-api.ts";
import type { AuditRecordView } from "./audit.ts";
import { confirmationPage } from "./confirm.ts";
import { type Agent, type Workspace, byId, joinErrors, list, named, problemText } from "./shared.ts";

/** The tools the installations of each workspace registered: workspace id → tool name → the installations' names. */
export type RegisteredTools = Map<string, Map<string, string[]>>;

/** Every installation's registered tools, by workspace (GET …/installations/{id}/tools each). */
export async function registeredTools(ctx: AdminContext, errors: string[]): Promise<RegisteredTools> {
  const installations = await list<Installation>(ctx, "/installations", "installations", errors);
  const lists = await Promise.all(installations.map(async (i) => ({ i, tools: await list<{ name: string }>(ctx, path`/installations/${i.id}/tools`, "tools", errors) })));
  const out: RegisteredTools = new Map();
  for (const { i, tools } of lists) {
    const ws = out.get(i.workspace_id) ?? new Map<string, string[]>();
    for (const t of tools) ws.set(t.name, [...(ws.get(t.name) ?? []), i.name]);
    out.set(i.workspace_id, ws);
  }
  return out;
}

/** The destination field's suggestions: model:invoke and every registered tool, named with its workspace and installations. Pure. */
export function destinationOptions(tools: RegisteredTools, workspaces: ReadonlyMap<string, { name: string }>): SafeHtml {
  const options: SafeHtml[] = [html`<option value="model:invoke">model calls through the Pipe</option>`];
  for (const [wsId, names] of tools) {
    for (const [name, insts] of [...names.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
      options.push(html`<option value="${`tool:${name}`}">${`registered in ${workspaces.get(wsId)?.name ?? wsId} by ${insts.join(", ")}`}</option>`);
    }
  }
  return html`<datalist id="dst-options">${options}</datalist>`;
}

/** A policy on a tool no installation of its workspace registered: it applies to nothing (spec §2) until one does. Pure. */
export function unregisteredTool(p: Pick<Policy, "dst" | "workspace_id">, tools: RegisteredTools): string | null {
  if (!p.dst.startsWith("tool:")) return null;
  const name = p.dst.slice("tool:".length);
  return tools.get(p.workspace_id)?.has(name) ? null : name;
}

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
type FormState = { error?: string | null; values?: Record<string, string>; status?: number; notice?: string | null; warnings?: string[] };

const NOTICES: Record<string, string> = { created: "Policy created.", updated: "Policy saved.", deleted: "Policy deleted." };

/** A policy's effect, condition and mode: the create form's and the edit form's fields alike. */
export function ruleFields(v: { effect?: string; condition?: string; mode?: string }): SafeHtml {
  return html`${selectField({
    label: "Effect",
    name: "effect",
    required: true,
    value: v.effect ?? "permit",
    options: [
      { value: "permit", label: "permit" },
      { value: "deny", label: "deny (overrides permits)" },
    ],
  })}
  ${field({ label: "Condition", name: "condition", value: v.condition, placeholder: "args.amount <= 500", hint: html`CEL over <code>args</code>, <code>user</code> (<code>id</code>, <code>email</code>, <code>groups</code>, <code>attributes</code>) and <code>now</code>, e.g. <code>now.getHours('Europe/Berlin') &lt; 18</code>. Leave empty to apply always.` })}
  ${selectField({
    label: "Mode",
    name: "mode",
    required: true,
    value: v.mode ?? "enforce",
    options: [
      { value: "enforce", label: "enforce" },
      { value: "shadow", label: "shadow: record what it would decide, change nothing" },
    ],
  })}`;
}

export async function getPolicies(pc: PageContext, state: FormState = {}): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const [policies, agents, workspaces, shadowed, tools] = await Promise.all([
    list<Policy>(ctx, "/policies", "policies", errors),
    list<Agent>(ctx, "/agents", "agents", errors),
    list<Workspace>(ctx, "/workspaces", "workspaces", errors),
    ctx.api.get<{ records: AuditRecordView[] }>(ctx.api.org(`/audit-records${query({ shadow: "changed", limit: SHADOW_ROWS })}`)),
    registeredTools(ctx, errors),
  ]);
  if (!shadowed.ok) errors.push(shadowed.problem.detail);
  const policyMap = new Map(policies.map((p) => [p.id, p]));
  const agentMap = byId(agents);
  const wsMap = byId(workspaces);
  const v = state.values ?? {};
  const rows = policies.map((p) => {
    const missing = unregisteredTool(p, tools);
    return html`<tr id="${p.id}">
  <td><strong>${p.name}</strong><br><span class="muted mono small">${p.id}</span></td>
  <td>${code(p.src)}<br><span class="muted">may</span> ${code(p.dst)}${missing ? html`<br>${badge("tool not registered", "warn")}<span class="visually-hidden">: no installation of this workspace registered ${missing}</span>` : ""}</td>
  <td>${badge(p.effect, p.effect === "permit" ? "ok" : "warn")}${p.mode === "shadow" ? html`<br>${badge("shadow", "info")}` : ""}</td>
  <td class="wrap">${p.condition ? code(p.condition) : html`<span class="muted">always</span>`}</td>
  <td>${p.agent_id ? named(agentMap, p.agent_id) : html`<span class="muted">any agent</span>`}<br><span class="muted">in</span> ${named(wsMap, p.workspace_id)}</td>
  <td class="row-actions"><a href="/audit${query({ policy: p.id })}">Recent decisions<span class="visually-hidden"> of ${p.name}</span></a><br><a class="btn btn-small btn-secondary" href="${path`/policies/${p.id}/edit`}" aria-label="Edit policy ${p.name}">Edit</a> <a class="btn btn-small btn-secondary" href="${path`/policies/${p.id}/delete`}" aria-label="Delete policy ${p.name}…">Delete…</a></td>
</tr>`;
  });
  const form = html`<form method="post" action="/policies" class="stack">
  ${csrfInput(ctx.session.csrfToken)}
  ${field({ label: "Name", name: "name", value: v.name, required: true })}
  ${field({ label: "Who (source)", name: "src", value: v.src, required: true, placeholder: "group:support", hint: html`<code>user:usr_…</code> (a service user id, see Users), <code>group:&lt;name&gt;</code> or <code>*</code>` })}
  ${field({ label: "What (destination)", name: "dst", value: v.dst, required: true, placeholder: "tool:crm.lookup", attrs: html`list="dst-options" autocomplete="off"`, hint: html`<code>model:invoke</code> or <code>tool:&lt;name&gt;</code>, the tool's declared name exactly: pick one the installations registered, or type one not registered yet (the policy applies once it is)` })}
  ${destinationOptions(tools, wsMap)}
  ${selectField({ label: "Workspace", name: "workspace", required: true, value: v.workspace ?? workspaces.find((w) => w.name === "default")?.id ?? "", options: workspaces.map((w) => ({ value: w.id, label: w.name })) })}
  ${selectField({ label: "Agent", name: "agent_id", value: v.agent_id ?? "", options: [{ value: "", label: "— not bound to one agent —" }, ...agents.map((a) => ({ value: a.id, label: `${a.name} (${a.id})` }))] })}
  ${ruleFields(v)}
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
      body: html`${warningsBanner(state.warnings ?? [])}${section("All policies", dataTable("Policies", ["Policy", "Who may do what", "Effect", "Condition", "Agent and workspace", "Actions"], rows, "No policies yet: every call is denied."))}
${section("What shadow policies would have changed", shadowChanges(shadowed.ok ? (shadowed.data.records ?? []) : [], policyMap))}
${section("Create a policy", form)}`,
    }),
    state.status ?? 200,
  );
}

/** The API's warnings about what was just saved (a tool not registered yet), as the CLI prints them. Pure. */
export function warningsBanner(warnings: readonly string[]): SafeHtml | "" {
  if (warnings.length === 0) return "";
  return html`<div class="banner banner-warn" role="status" data-warnings><strong>Saved, with ${warnings.length === 1 ? "a warning" : `${warnings.length} warnings`}:</strong><ul>${warnings.map((w) => html`<li>${w}</li>`)}</ul></div>`;
}

export async function postPolicy(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const f = ctx.form;
  const res = await ctx.api.send<PolicyWritten>("POST", ctx.api.org("/policies"), {
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
  // Warnings are shown on the page that answers the POST itself: a redirect would drop them.
  const warnings = res.data.warnings ?? [];
  if (warnings.length > 0) return getPolicies(pc, { notice: NOTICES.created, warnings });
  return redirect("/policies?done=created");
}

/** The confirmation before a policy is deleted. */
export async function getPolicyDelete(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const id = ctx.params.id ?? "";
  const p = (await list<Policy>(ctx, "/policies", "policies", errors)).find((x) => x.id === id);
  if (!p)
    return page(
      shell(ctx.session, { title: "Delete policy", active: "policies", error: joinErrors(errors) ?? `No policy ${id} in this organization.`, body: html`<p><a href="/policies">All policies</a></p>` }),
      404,
    );
  return confirmationPage(ctx, {
    title: `Delete policy "${p.name}"?`,
    active: "policies",
    heading: "Deleting a policy changes decisions at each runtime's next bundle poll",
    warning: html`<strong>${p.effect === "permit" ? `Calls it permits are denied from then on` : `Calls it denies may be permitted from then on`}</strong> unless another policy decides them. Its past decisions stay in the audit, naming its id. This cannot be undone; create the policy again to bring it back.`,
    facts: [
      ["Policy", html`${p.name} ${code(p.id)}`],
      ["Rule", html`${badge(p.effect, p.effect === "permit" ? "ok" : "warn")} ${code(p.src)} → ${code(p.dst)}${p.condition ? html` when ${code(p.condition)}` : ""}`],
    ],
    action: path`/policies/${p.id}/delete`,
    button: "Delete policy",
    back: "/policies",
  });
}

export async function postPolicyDelete(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const res = await ctx.api.send("DELETE", ctx.api.org(path`/policies/${ctx.params.id ?? ""}`));
  if (!res.ok) return getPolicies(pc, { error: problemText(res.problem), status: res.problem.status });
  return redirect("/policies?done=deleted");
}
