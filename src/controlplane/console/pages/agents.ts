// Agents: list and create (the CLI has no agent-create command; spec §1 setup step 1).
import { type PageContext, type PageResult, page, redirect } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { html, query } from "../html.ts";
import { code, csrfInput, dataTable, field, section, selectField, shell, time } from "../layout.ts";
import { type Agent, type Workspace, byId, joinErrors, list, named, problemText } from "./shared.ts";

type FormState = { error?: string | null; values?: Record<string, string>; status?: number };

export async function getAgents(pc: PageContext, state: FormState = {}): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const [agents, workspaces] = await Promise.all([list<Agent>(ctx, "/agents", "agents", errors), list<Workspace>(ctx, "/workspaces", "workspaces", errors)]);
  const wsMap = byId(workspaces);
  const created = ctx.url.searchParams.get("created");
  const createdAgent = created ? agents.find((a) => a.id === created) : undefined;
  const v = state.values ?? {};
  const rows = agents.map(
    (a) => html`<tr ${a.id === created ? html`class="highlight"` : ""}>
  <td><strong>${a.name}</strong>${a.description ? html`<br><span class="muted">${a.description}</span>` : ""}</td>
  <td>${code(a.id)}</td>
  <td>${named(wsMap, a.workspace_id)}</td>
  <td>${time(a.created_at)}</td>
</tr>`,
  );
  const form = html`<form method="post" action="/agents" class="stack">
  ${csrfInput(ctx.session.csrfToken)}
  ${field({ label: "Name", name: "name", value: v.name, required: true, hint: "For example: helpdesk assistant." })}
  ${selectField({
    label: "Workspace",
    name: "workspace",
    required: true,
    value: v.workspace ?? workspaces.find((w) => w.name === "default")?.id ?? "",
    options: workspaces.map((w) => ({ value: w.id, label: w.name })),
  })}
  ${field({ label: "Description", name: "description", value: v.description })}
  <div class="actions"><button type="submit" class="btn">Create agent</button></div>
</form>`;
  return page(
    shell(ctx.session, {
      title: "Agents",
      active: "agents",
      lead: "An agent is what an installation, its policies and its model profile bind to. Create it here, then pass its id to svc bot init.",
      notice: createdAgent ? `Agent "${createdAgent.name}" created. Its id is ${createdAgent.id}.` : null,
      error: state.error ?? joinErrors(errors),
      body: html`${section("All agents", dataTable("Agents", ["Agent", "Id", "Workspace", "Created"], rows, "No agents yet. Create the chat agent below."))}
${section("Create an agent", form)}`,
    }),
    state.status ?? 200,
  );
}

export async function postAgent(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const f = ctx.form;
  const res = await ctx.api.send<Agent>("POST", ctx.api.org("/agents"), {
    name: (f.name ?? "").trim(),
    workspace: f.workspace ?? "",
    ...(f.description?.trim() ? { description: f.description.trim() } : {}),
  });
  if (!res.ok) return getAgents(pc, { error: problemText(res.problem), values: f, status: res.problem.status });
  return redirect(`/agents${query({ created: res.data.id })}`);
}
