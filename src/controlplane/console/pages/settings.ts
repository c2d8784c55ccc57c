// Organization settings: the escrow switch (refused, with the reason, while no customer key is
// active) and single sign-on (OpenID Connect) for the organization's console sign-in. Only an
// owner changes single sign-on: whoever controls the provider can sign in as any member it
// names, so an admin who could point it at their own provider could act as every other admin
// (owners are never signed in by it, auth/service.ts `ssoMayOpen`). Admins see its status.
// A change of provider is announced to the other owners and admins (notices/): an owner with a
// provider of their own could act as any admin, and escrow recovery trusts only provider
// identities older than its minimum age (escrow/approval-rules.ts).
import type { Settings } from "../../../contract/admin-api.ts";
import { type PageContext, type PageResult, consoleActing, page, redirect } from "../context.ts";
import { requireAdmin, requireOwner } from "../guard.ts";
import { html } from "../html.ts";
import { badge, code, csrfInput, field, section, shell } from "../layout.ts";
import { CALLBACK_PATH, SsoError, deleteOidcSettings, getOidcSettings, saveOidcSettings } from "../oidc.ts";
import type { AuditKey } from "./audit-keys.ts";
import { joinErrors, list, problemText } from "./shared.ts";
import { postNotice } from "../../notices/service.ts";
import { confirmationPage } from "./confirm.ts";
import { SSO_NOTICE_ACTION } from "./notices.ts";

type FormState = { error?: string | null; status?: number; sso?: { issuer?: string; client_id?: string } };

const NOTICES: Record<string, string> = {
  "escrow-on": "Escrow is on: new audit records are also encrypted to the service's escrow key.",
  "escrow-off": "Escrow is off.",
  "sso-saved": "Single sign-on saved.",
  "sso-removed": "Single sign-on removed; members sign in with their password.",
};

const NO_KEY_EXPLANATION =
  "Escrow adds the service's own key next to your customer keys, so it can only be switched on while at least one customer audit key is active. Register a key under Audit keys first.";

export async function getSettings(pc: PageContext, state: FormState = {}): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const [got, keys] = await Promise.all([ctx.api.get<Settings>(ctx.api.org("/settings")), list<AuditKey>(ctx, "/audit-encryption-keys", "keys", errors)]);
  if (!got.ok) errors.unshift(got.problem.detail);
  const s = got.ok ? got.data : null;
  const activeKeys = keys.filter((k) => k.status === "active").length;
  const enabled = !!s?.escrow_enabled;
  const escrow = html`<p>Escrow is ${enabled ? badge("on", "ok") : badge("off", "muted")}${enabled && s?.escrow_active === false ? html` ${badge("inactive: no active customer key", "warn")}` : ""}</p>
<p>With escrow on, the service's escrow recipient is added to every new record next to the customer keys; its private key is held wrapped by the service's key-management system.</p>
${activeKeys === 0 && !enabled ? html`<p class="banner banner-warn" id="escrow-needs-key">${NO_KEY_EXPLANATION} <a href="/audit-keys">Audit keys</a></p>` : ""}
${s?.escrow_recipient ? html`<p>Escrow recipient: ${code(s.escrow_recipient)}</p>` : ""}
<form method="post" action="/settings/escrow" class="actions">
  ${csrfInput(ctx.session.csrfToken)}
  <input type="hidden" name="escrow_enabled" value="${enabled ? "false" : "true"}">
  <button type="submit" class="btn ${enabled ? "btn-secondary" : ""}" ${activeKeys === 0 && !enabled ? html`aria-describedby="escrow-needs-key"` : ""}>${enabled ? "Turn escrow off" : "Turn escrow on"}</button>
</form>`;

  const oidc = await getOidcSettings(ctx.deps, ctx.session.principal.orgId);
  const publicUrl = ctx.deps.config.publicUrl;
  const ssoLink = `${publicUrl}/sign-in?org=${encodeURIComponent(ctx.session.principal.orgId)}`;
  const v = state.sso ?? {};
  const owner = ctx.session.principal.role === "owner";
  const ssoStatus = html`<p>Members and admins can sign in with your OpenID Connect provider; the account is matched by the provider's verified email and must already be a member here. Owners always sign in with their password.</p>
<dl class="props">
  <dt>Status</dt><dd>${oidc ? badge("configured", "ok") : badge("not configured", "muted")}</dd>
  ${oidc ? html`<dt>Issuer</dt><dd>${code(oidc.issuer)}</dd>` : ""}
  <dt>Redirect URI</dt><dd>${code(publicUrl + CALLBACK_PATH)} <span class="hint">register this at the provider</span></dd>
  <dt>Sign-in link</dt><dd>${code(ssoLink)} <span class="hint">share with members</span></dd>
</dl>`;
  const sso = !owner
    ? html`${ssoStatus}<p class="banner banner-warn" role="note">Only an owner can change single sign-on.</p>`
    : html`${ssoStatus}
<form method="post" action="/settings/sso" class="stack">
  ${csrfInput(ctx.session.csrfToken)}
  ${field({ label: "Issuer", name: "issuer", type: "url", required: true, value: v.issuer ?? oidc?.issuer ?? "", placeholder: "https://login.example.com/realms/acme", hint: "Discovery is read from {issuer}/.well-known/openid-configuration." })}
  ${field({ label: "Client ID", name: "client_id", required: true, value: v.client_id ?? oidc?.clientId ?? "", autocomplete: "off" })}
  ${field({
    label: "Client secret",
    name: "client_secret",
    type: "password",
    required: !oidc,
    autocomplete: "new-password",
    hint: oidc ? "Stored encrypted; leave empty to keep the current secret." : "Stored encrypted; never shown again.",
  })}
  <div class="actions"><button type="submit" class="btn">Save single sign-on</button></div>
</form>
${oidc ? html`<div class="actions"><a class="btn btn-secondary" href="/settings/sso/delete">Remove single sign-on…</a></div>` : ""}`;
  const done = ctx.url.searchParams.get("done");
  return page(
    shell(ctx.session, {
      title: "Settings",
      active: "settings",
      notice: done ? (NOTICES[done] ?? null) : null,
      error: state.error ?? joinErrors(errors),
      body: html`${section("Audit escrow", escrow, { id: "escrow-h" })}${section("Single sign-on (OpenID Connect)", sso, { id: "sso-h" })}`,
    }),
    state.status ?? 200,
  );
}

export async function postEscrow(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const enable = ctx.form.escrow_enabled === "true";
  const res = await ctx.api.send<Settings>("PATCH", ctx.api.org("/settings"), { escrow_enabled: enable });
  if (!res.ok) {
    const why = res.problem.code === "escrow_requires_key" ? `Escrow stays off. ${NO_KEY_EXPLANATION}` : problemText(res.problem);
    return getSettings(pc, { error: why, status: res.problem.status });
  }
  return redirect(`/settings?done=${enable ? "escrow-on" : "escrow-off"}`);
}

/** Posted after the change (its own statement): the admin trail's event is the record, this the alert. */
async function announceSso(ctx: { deps: PageContext["deps"]; session: { principal: { orgId: string; accountId: string } } }, text: string): Promise<void> {
  await postNotice(ctx.deps.db, { orgId: ctx.session.principal.orgId, action: SSO_NOTICE_ACTION, result: "ok", actorAccountId: ctx.session.principal.accountId, text }, ctx.deps.now());
}

export async function postSso(pc: PageContext): Promise<PageResult> {
  const ctx = requireOwner(pc, "change single sign-on");
  const f = ctx.form;
  try {
    await saveOidcSettings(ctx.deps, ctx.session.principal.orgId, { issuer: f.issuer ?? "", clientId: f.client_id ?? "", clientSecret: f.client_secret ?? "" }, consoleActing(ctx));
  } catch (e) {
    if (e instanceof SsoError) return getSettings(pc, { error: e.message, status: 422, sso: { issuer: f.issuer ?? "", client_id: f.client_id ?? "" } });
    throw e;
  }
  ctx.deps.log.info("console sso configured", { org: ctx.session.principal.orgId });
  await announceSso(ctx, `${ctx.session.principal.email} pointed single sign-on at ${f.issuer?.trim()} (client ${f.client_id?.trim()}): whoever runs that provider can sign in as any member it names`);
  return redirect("/settings?done=sso-saved");
}

/** The confirmation before single sign-on is removed (owners only, as the removal). */
export function getSsoDelete(pc: PageContext): PageResult {
  const ctx = requireOwner(pc, "remove single sign-on");
  return confirmationPage(ctx, {
    title: "Remove single sign-on?",
    active: "settings",
    heading: "Sign-ins through the identity provider stop at once",
    warning: html`<strong>Members who sign in only with single sign-on cannot sign in to the console, and chat users cannot link through it,</strong> until it is set up again (with the client secret: it is not kept). Password sign-in is not affected. The other owners and admins are told.`,
    facts: [["Organization", ctx.session.orgName]],
    action: "/settings/sso/delete",
    button: "Remove single sign-on",
    back: "/settings",
  });
}

export async function postSsoDelete(pc: PageContext): Promise<PageResult> {
  const ctx = requireOwner(pc, "remove single sign-on");
  await deleteOidcSettings(ctx.deps, ctx.session.principal.orgId, consoleActing(ctx));
  ctx.deps.log.info("console sso removed", { org: ctx.session.principal.orgId });
  await announceSso(ctx, `${ctx.session.principal.email} removed single sign-on`);
  return redirect("/settings?done=sso-removed");
}
