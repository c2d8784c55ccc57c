// The directory: service users (with their groups), groups, linked front-end identities, and
// the console members of the organization (accounts and roles).
import { type PageContext, type PageResult, page, redirect } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { html } from "../html.ts";
import { badge, code, csrfInput, dataTable, field, section, selectField, shell, time } from "../layout.ts";
import { joinErrors, list, problemText } from "./shared.ts";

type User = { id: string; email: string; display_name: string | null; disabled: boolean; source: string; groups?: string[] };
type Group = { id: string; name: string; source: string; members: number };
type RemoteIdentity = {
  id: string;
  platform: string;
  remote_user_id: string;
  installation_id?: string | null;
  linked_at?: string | null;
  user_id?: string | null;
  email?: string | null;
  display_name?: string | null;
};
type Member = { account_id: string; email: string; role: string };

export async function getUsers(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const users = await list<User>(ctx, "/users", "users", errors);
  const rows = users.map(
    (u) => html`<tr>
  <td><strong>${u.email}</strong>${u.display_name ? html`<br><span class="muted">${u.display_name}</span>` : ""}</td>
  <td>${code(u.id)}</td>
  <td>${(u.groups ?? []).length ? (u.groups ?? []).map((g) => html`${badge(g, "info")} `) : html`<span class="muted">—</span>`}</td>
  <td>${u.source}</td>
  <td>${u.disabled ? badge("disabled", "bad") : badge("active", "ok")}</td>
</tr>`,
  );
  return page(
    shell(ctx.session, {
      title: "Users",
      active: "users",
      lead: "Service users are the identities decisions are made and audited under, keyed by email. Directory sync and claim links create them.",
      error: joinErrors(errors),
      body: dataTable("Users", ["User", "Id", "Groups", "Source", "Status"], rows, "No users yet."),
    }),
  );
}

export async function getGroups(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const groups = await list<Group>(ctx, "/groups", "groups", errors);
  const rows = groups.map(
    (g) => html`<tr><td><strong>${g.name}</strong><br><span class="muted">policy source ${code(`group:${g.name}`)}</span></td><td>${code(g.id)}</td><td>${g.source}</td><td>${g.members}</td></tr>`,
  );
  return page(
    shell(ctx.session, {
      title: "Groups",
      active: "groups",
      error: joinErrors(errors),
      body: dataTable("Groups", ["Group", "Id", "Source", "Members"], rows, "No groups yet."),
    }),
  );
}

export async function getIdentities(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const [identities, users] = await Promise.all([list<RemoteIdentity>(ctx, "/remote-identities", "remote_identities", errors), list<User>(ctx, "/users", "users", errors)]);
  const emails = new Map(users.map((u) => [u.id, u.email]));
  const rows = identities.map((r) => {
    const userEmail = r.email ?? (r.user_id ? emails.get(r.user_id) : undefined);
    const linked = !!(r.user_id || r.linked_at);
    return html`<tr>
  <td>${code(`${r.platform}:${r.remote_user_id}`)}${r.display_name ? html`<br><span class="muted">${r.display_name}</span>` : ""}</td>
  <td>${linked ? html`${badge("linked", "ok")} ${userEmail ?? (r.user_id ? code(r.user_id) : "")}` : badge("unlinked", "warn")}</td>
  <td>${r.installation_id ? code(r.installation_id) : html`<span class="muted">—</span>`}</td>
  <td>${time(r.linked_at, "—")}</td>
</tr>`;
  });
  return page(
    shell(ctx.session, {
      title: "Linked identities",
      active: "identities",
      lead: "Front-end users and the service users they are linked to. An unlinked user gets a one-time claim link in the chat.",
      error: joinErrors(errors),
      body: dataTable("Front-end identities", ["Front-end user", "Service user", "Installation", "Linked"], rows, "No front-end identities yet."),
    }),
  );
}

type FormState = { error?: string | null; values?: Record<string, string>; status?: number };

export async function getMembers(pc: PageContext, state: FormState = {}): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const members = await list<Member>(ctx, "/members", "members", errors);
  const v = state.values ?? {};
  const rows = members.map((m) => html`<tr><td>${m.email}</td><td>${badge(m.role, m.role === "member" ? "muted" : "info")}</td><td>${code(m.account_id)}</td></tr>`);
  const form = html`<form method="post" action="/members" class="stack">
  ${csrfInput(ctx.session.csrfToken)}
  ${field({ label: "Email", name: "email", type: "email", value: v.email, required: true, autocomplete: "off" })}
  ${selectField({
    label: "Role",
    name: "role",
    value: v.role ?? "member",
    required: true,
    options: [
      { value: "member", label: "member — can sign in and link their chat account" },
      { value: "admin", label: "admin — does admin work" },
      { value: "owner", label: "owner" },
    ],
  })}
  ${field({ label: "Initial password", name: "password", type: "password", autocomplete: "new-password", hint: "At least 12 characters; leave empty for accounts that sign in with single sign-on." })}
  <div class="actions"><button type="submit" class="btn">Add member</button></div>
</form>`;
  const done = ctx.url.searchParams.get("done");
  return page(
    shell(ctx.session, {
      title: "Console members",
      active: "members",
      lead: "Accounts that can sign in to this organization's console. Only owners and admins do admin work.",
      notice: done === "added" ? "Member saved." : null,
      error: state.error ?? joinErrors(errors),
      body: html`${section("Members", dataTable("Members", ["Email", "Role", "Account"], rows, "No members."))}${section("Add a member", form)}`,
    }),
    state.status ?? 200,
  );
}

export async function postMember(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const f = ctx.form;
  const res = await ctx.api.send("POST", ctx.api.org("/members"), {
    email: (f.email ?? "").trim(),
    role: f.role ?? "member",
    ...(f.password ? { password: f.password } : {}),
  });
  if (!res.ok) return getMembers(pc, { error: problemText(res.problem), values: { email: f.email ?? "", role: f.role ?? "" }, status: res.problem.status });
  return redirect("/members?done=added");
}
