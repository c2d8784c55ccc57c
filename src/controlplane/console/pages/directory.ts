// The directory: service users (with their groups; disable/enable), groups, linked front-end
// identities, and the console members of the organization (accounts and roles; remove through
// a confirmation page) with the organization's API tokens (revoke).
import type { ApiToken, Group, Member, RemoteIdentity, User } from "../../../contract/admin-api.ts";
import { type PageContext, type PageResult, page, redirect } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { html, path, query } from "../html.ts";
import { badge, code, csrfInput, dataTable, field, section, selectField, shell, time } from "../layout.ts";
import { confirmationPage } from "./confirm.ts";
import { joinErrors, list, problemText } from "./shared.ts";

type FormState = { error?: string | null; values?: Record<string, string>; status?: number };

const USER_NOTICES: Record<string, string> = {
  disabled: "User disabled. Their chat accounts are treated as unlinked from the next policy update: every call is refused.",
  enabled: "User enabled. Their linked chat accounts are decided by policy again from the next policy update.",
};
const MEMBER_NOTICES: Record<string, string> = {
  added: "Member saved.",
  removed: "Member removed. Their console sessions in this organization ended and their API tokens here were revoked.",
  revoked: "API token revoked. It is refused from now on.",
};

export async function getUsers(pc: PageContext, state: FormState = {}): Promise<PageResult> {
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
  <td><a href="/audit${query({ user: u.id })}">Audit records<span class="visually-hidden"> of ${u.email}</span></a></td>
  <td><form method="post" action="${u.disabled ? path`/users/${u.id}/enable` : path`/users/${u.id}/disable`}">${csrfInput(ctx.session.csrfToken)}<button type="submit" class="btn btn-small btn-secondary" aria-label="${u.disabled ? "Enable" : "Disable"} user ${u.email}">${u.disabled ? "Enable" : "Disable"}</button></form></td>
</tr>`,
  );
  const done = ctx.url.searchParams.get("done");
  return page(
    shell(ctx.session, {
      title: "Users",
      active: "users",
      lead: "Service users are the identities decisions are made and audited under, keyed by email. Directory sync and claim links create them. A disabled user's chat accounts are treated as unlinked: every call is refused.",
      notice: done ? (USER_NOTICES[done] ?? null) : null,
      error: state.error ?? joinErrors(errors),
      body: dataTable("Users", ["User", "Id", "Groups", "Source", "Status", "Decisions", ""], rows, "No users yet."),
    }),
    state.status ?? 200,
  );
}

async function setUserState(pc: PageContext, action: "disable" | "enable"): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const res = await ctx.api.send<User>("POST", ctx.api.org(path`/users/${ctx.params.id ?? ""}/${action}`));
  if (!res.ok) return getUsers(pc, { error: problemText(res.problem), status: res.problem.status });
  return redirect(`/users?done=${action}d`);
}

export const postUserDisable = async (pc: PageContext) => setUserState(pc, "disable");
export const postUserEnable = async (pc: PageContext) => setUserState(pc, "enable");

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

export async function getMembers(pc: PageContext, state: FormState = {}): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const [members, tokens] = await Promise.all([list<Member>(ctx, "/members", "members", errors), list<ApiToken>(ctx, "/api-tokens", "api_tokens", errors)]);
  const v = state.values ?? {};
  const rows = members.map(
    (m) =>
      html`<tr><td>${m.email}</td><td>${badge(m.role, m.role === "member" ? "muted" : "info")}</td><td>${code(m.account_id)}</td><td><a class="btn btn-small btn-secondary" href="${path`/members/${m.account_id}/remove`}" aria-label="Remove member ${m.email}">Remove…</a></td></tr>`,
  );
  const tokenRows = tokens.map(
    (t) => html`<tr>
  <td><strong>${t.name}</strong><br><span class="muted mono">${t.id}</span></td>
  <td>${t.account_email}</td>
  <td>${time(t.created_at)}</td>
  <td>${time(t.last_used_at)}</td>
  <td>${t.revoked_at ? html`${badge("revoked", "bad")}<br><span class="muted">${time(t.revoked_at)}</span>` : t.expires_at ? html`${badge("active", "ok")}<br><span class="muted">expires ${time(t.expires_at)}</span>` : badge("active", "ok")}</td>
  <td>${t.revoked_at ? "" : html`<a class="btn btn-small btn-secondary" href="${path`/api-tokens/${t.id}/revoke`}" aria-label="Revoke API token ${t.name} of ${t.account_email}…">Revoke…</a>`}</td>
</tr>`,
  );
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
      notice: done ? (MEMBER_NOTICES[done] ?? null) : null,
      error: state.error ?? joinErrors(errors),
      body: html`${section("Members", dataTable("Members", ["Email", "Role", "Account", ""], rows, "No members."))}${section("Add a member", form)}${section(
        "API tokens",
        html`<p class="hint">Tokens the CLI uses (<code>svc login</code>). A revoked token is refused at once; the token itself is never shown again.</p>${dataTable("API tokens", ["Token", "Account", "Created", "Last used", "Status", ""], tokenRows, "No API tokens.")}`,
      )}`,
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

export async function getRemoveMember(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const accountId = ctx.params.id ?? "";
  const members = await list<Member>(ctx, "/members", "members", errors);
  const m = members.find((x) => x.account_id === accountId);
  if (!m) {
    const error = joinErrors(errors) ?? `member ${accountId} not found`;
    return page(shell(ctx.session, { title: "Remove member", active: "members", error, body: html`<p><a href="/members">All members</a></p>` }), errors.length ? 500 : 404);
  }
  const self = m.account_id === ctx.session.principal.accountId;
  return page(
    shell(ctx.session, {
      title: `Remove ${m.email}?`,
      active: "members",
      body: html`<section class="panel" aria-labelledby="confirm-h">
<h2 id="confirm-h">Removing a member ends their access at once</h2>
<div class="banner banner-warn" role="note"><strong>Their console sessions in this organization end and their API tokens here are revoked.</strong> The account itself and its other organizations are not touched. Adding the email again later restores membership, not the revoked tokens.${self ? html` <strong>This is your own account: you will be signed out of this organization.</strong>` : ""}</div>
<dl class="props"><dt>Email</dt><dd>${m.email}</dd><dt>Role</dt><dd>${badge(m.role, m.role === "member" ? "muted" : "info")}</dd><dt>Account</dt><dd>${code(m.account_id)}</dd></dl>
<form method="post" action="${path`/members/${m.account_id}/remove`}" class="actions">
  ${csrfInput(ctx.session.csrfToken)}
  <button type="submit" class="btn btn-danger">Remove member</button>
  <a class="btn btn-ghost" href="/members">Cancel</a>
</form>
</section>`,
    }),
  );
}

export async function postRemoveMember(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const res = await ctx.api.send("DELETE", ctx.api.org(path`/members/${ctx.params.id ?? ""}`));
  if (!res.ok) return getMembers(pc, { error: problemText(res.problem), status: res.problem.status });
  // Removing yourself ends this session: the next page is the sign-in page.
  return redirect(ctx.params.id === ctx.session.principal.accountId ? "/sign-in" : "/members?done=removed");
}

/** The confirmation before an API token is revoked. */
export async function getRevokeToken(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const t = (await list<ApiToken>(ctx, "/api-tokens", "api_tokens", errors)).find((x) => x.id === ctx.params.id && !x.revoked_at);
  if (!t)
    return page(
      shell(ctx.session, {
        title: "Revoke API token",
        active: "members",
        error: joinErrors(errors) ?? `No active API token ${ctx.params.id ?? ""} in this organization.`,
        body: html`<p><a href="/members">Console members</a></p>`,
      }),
      404,
    );
  return confirmationPage(ctx, {
    title: `Revoke API token "${t.name}"?`,
    active: "members",
    heading: "A revoked token is refused at once, for good",
    warning: html`<strong>Every CLI or script using it stops working now.</strong> It cannot be enabled again; its owner makes a new one with <code>svc login</code>.`,
    facts: [
      ["Token", html`${t.name} ${code(t.id)}`],
      ["Account", t.account_email],
      ["Last used", time(t.last_used_at)],
    ],
    action: path`/api-tokens/${t.id}/revoke`,
    button: "Revoke token",
    back: "/members",
  });
}

export async function postRevokeToken(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const res = await ctx.api.send("DELETE", ctx.api.org(path`/api-tokens/${ctx.params.id ?? ""}`));
  if (!res.ok) return getMembers(pc, { error: problemText(res.problem), status: res.problem.status });
  return redirect("/members?done=revoked");
}
