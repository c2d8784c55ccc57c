// Policies: the list (with the agent each is bound to) and creating one, including the agent
// binding that older CLI releases cannot set (spec §2, Policy).
import { type PageContext, type PageResult, page, redirect } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { html, path } from "../html.ts";
import { badge, code, csrfInput, dataTable, field, section, selectField, shell } from "../layout.ts";
import { type Agent, type Workspace, byId, joinErrors, list, named, problemText } from "./shared.ts";

type Policy = { id: string; name: string; src: string; dst: string; effect: string; agent_id: string | null; workspace_id: string; created_at: string };
type FormState = { error?: string | null; values?: Record<string, string>; status?: number; notice?: string | null };

const NOTICES: Record<string, string> = { created: "Policy created.", deleted: "Policy deleted." };

export async function getPolicies(pc: PageContext, state: FormState = {}): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const [policies, agents, workspaces] = await Promise.all([
    list<Policy>(ctx, "/policies", "policies", errors),
    list<Agent>(ctx, "/agents", "agents", errors),
    list<Workspace>(ctx, "/workspaces", "workspaces", errors),
  ]);
  const agentMap = byId(agents);
  const wsMap = byId(workspaces);
  const v = state.values ?? {};
  const rows = policies.map(
    (p) => html`<tr>
  <td><strong>${p.name}</strong><br><span class="muted mono">${p.id}</span></td>
  <td>${code(p.src)}</td>
  <td>${code(p.dst)}</td>
  <td>${badge(p.effect, p.effect === "permit" ? "ok" : "warn")}</td>
  <td>${p.agent_id ? named(agentMap, p.agent_id) : html`<span class="muted">any agent</span>`}</td>
  <td>${named(wsMap, p.workspace_id)}</td>
  <td><form method="post" action="${path`/policies/${p.id}/delete`}">${csrfInput(ctx.session.csrfToken)}<button type="submit" class="btn btn-small btn-secondary" aria-label="Delete policy ${p.name}">Delete</button></form></td>
</tr>`,
  );
  const form = html`<form method="post" action="/policies" class="stack">
  ${csrfInput(ctx.session.csrfToken)}
  ${field({ label: "Name", name: "name", value: v.name, required: true })}
  ${field({ label: "Who (source)", name: "src", value: v.src, required: true, placeholder: "group:support", hint: html`<code>user:usr_…</code> (a service user id, see Users), <code>group:&lt;name&gt;</code> or <code>*</code>` })}
  ${field({ label: "What (destination)", name: "dst", value: v.dst, required: true, placeholder: "tool:crm.lookup", hint: html`<code>model:invoke</code> or <code>tool:&lt;name&gt;</code>, the tool's declared name exactly` })}
  ${selectField({ label: "Workspace", name: "workspace", required: true, value: v.workspace ?? workspaces.find((w) => w.name === "default")?.id ?? "", options: workspaces.map((w) => ({ value: w.id, label: w.name })) })}
  ${selectField({ label: "Agent", name: "agent_id", value: v.agent_id ?? "", options: [{ value: "", label: "— not bound to one agent —" }, ...agents.map((a) => ({ value: a.id, label: `${a.name} (${a.id})` }))] })}
  <input type="hidden" name="effect" value="permit">
  <p class="hint">Effect: <strong>permit</strong>. Without a permit, calls are denied.</p>
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
      body: html`${section("All policies", dataTable("Policies", ["Policy", "Who", "What", "Effect", "Agent", "Workspace", ""], rows, "No policies yet: every call is denied."))}
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
    effect: "permit",
    workspace: f.workspace ?? "",
    ...(f.agent_id ? { agent_id: f.agent_id } : {}),
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
