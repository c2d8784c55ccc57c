// Model profiles with their readiness (created and assigned with `svc model-profiles`).
import type { ModelProfile } from "../../../contract/admin-api.ts";
import { type PageContext, type PageResult, page } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { html, path } from "../html.ts";
import { badge, code, dataTable, shell } from "../layout.ts";
import { type Readiness, type Workspace, byId, joinErrors, list, named, readinessCell } from "./shared.ts";

export async function getModelProfiles(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const [profiles, workspaces] = await Promise.all([list<ModelProfile>(ctx, "/model-profiles", "model_profiles", errors), list<Workspace>(ctx, "/workspaces", "workspaces", errors)]);
  const readiness = await Promise.all(
    profiles.map(async (p) => {
      const got = await ctx.api.get<Readiness>(ctx.api.org(path`/model-profiles/${p.id}/readiness`));
      return got.ok ? got.data : { error: got.problem.detail };
    }),
  );
  const wsMap = byId(workspaces);
  const rows = profiles.map((p, i) => {
    const r = readiness[i]!;
    const ready = readinessCell(r);
    return html`<tr>
  <td><strong>${p.display_name}</strong><br><span class="muted mono">${p.id}</span></td>
  <td>${code(p.endpoint)}</td>
  <td>${code(p.default_model)}${p.models?.length ? html`<br><span class="muted">${p.models.join(", ")}</span>` : ""}</td>
  <td>${p.auth_type === "api_key" ? html`API key ${p.has_api_key ? badge("sealed", "ok") : badge("missing", "bad")}` : "none"}</td>
  <td>${named(wsMap, p.workspace_id)}</td>
  <td>${ready}</td>
</tr>`;
  });
  return page(
    shell(ctx.session, {
      title: "Model profiles",
      active: "model-profiles",
      lead: html`A model profile says which chat-completions endpoint and models an agent uses. Create and assign with <code>svc model-profiles create</code> and <code>svc model-profiles assign</code>.`,
      error: joinErrors(errors),
      body: dataTable("Model profiles", ["Profile", "Endpoint", "Models", "Auth", "Workspace", "Readiness"], rows, "No model profiles yet."),
    }),
  );
}
