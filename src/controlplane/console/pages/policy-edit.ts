// Editing one policy (issue 17): its name, effect, CEL condition and mode (enforce or shadow),
// through the same PATCH the CLI's `svc policies update` uses, so the same checks apply (a
// condition's type or syntax error comes back naming its position, and the form keeps what was
// typed). Who and what are changed by making a new policy: the audit names policies by id.
import type { Policy } from "../../../contract/admin-api.ts";
import { type PageContext, type PageResult, page, redirect } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { html, path, query } from "../html.ts";
import { code, csrfInput, field, section, shell } from "../layout.ts";
import { ruleFields } from "./policies.ts";
import { joinErrors, list, problemText } from "./shared.ts";

type FormState = { error?: string | null; values?: Record<string, string>; status?: number };

export async function getPolicyEdit(pc: PageContext, state: FormState = {}): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const id = ctx.params.id ?? "";
  const p = (await list<Policy>(ctx, "/policies", "policies", errors)).find((x) => x.id === id);
  if (!p)
    return page(
      shell(ctx.session, { title: "Edit policy", active: "policies", error: joinErrors(errors) ?? `No policy ${id} in this organization.`, body: html`<p><a href="/policies">All policies</a></p>` }),
      404,
    );
  const v = state.values ?? { name: p.name, effect: p.effect, condition: p.condition ?? "", mode: p.mode ?? "enforce" };
  const form = html`<form method="post" action="${path`/policies/${p.id}`}" class="stack">
  ${csrfInput(ctx.session.csrfToken)}
  <dl class="props"><dt>Who</dt><dd>${code(p.src)}</dd><dt>What</dt><dd>${code(p.dst)}</dd></dl>
  ${field({ label: "Name", name: "name", value: v.name, required: true })}
  ${ruleFields(v)}
  <div class="actions"><button type="submit" class="btn">Save policy</button><a class="btn btn-ghost" href="/policies">Cancel</a><a class="btn btn-ghost" href="/audit${query({ policy: p.id })}">Recent decisions</a></div>
</form>`;
  return page(
    shell(ctx.session, {
      title: `Edit policy ${p.name}`,
      active: "policies",
      lead: "A change takes effect at each runtime's next bundle poll.",
      error: state.error ?? joinErrors(errors),
      body: section("Policy", form),
    }),
    state.status ?? 200,
  );
}

export async function postPolicyEdit(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const f = ctx.form;
  const condition = (f.condition ?? "").trim();
  const res = await ctx.api.send("PATCH", ctx.api.org(path`/policies/${ctx.params.id ?? ""}`), {
    name: (f.name ?? "").trim(),
    effect: f.effect === "deny" ? "deny" : "permit",
    condition: condition || null,
    mode: f.mode === "shadow" ? "shadow" : "enforce",
  });
  if (!res.ok) return getPolicyEdit(pc, { error: problemText(res.problem), values: f, status: res.problem.status });
  return redirect("/policies?done=updated");
}
