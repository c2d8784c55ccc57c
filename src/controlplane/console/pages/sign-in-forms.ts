// The sign-in forms shared by the sign-in and claim pages: email and password, and single
// sign-on (a button when the organization is known and configured, else a field for its id).
import { getOrganization } from "../../organizations/service.ts";
import type { PageContext } from "../context.ts";
import { type SafeHtml, html } from "../html.ts";
import { csrfInput, field } from "../layout.ts";
import { getOidcSettings } from "../oidc.ts";

/** The email and password form, shared by the sign-in and claim pages. */
export function passwordForm(o: { action: string; csrf: string; next?: string; orgId?: string | null; email?: string | null; submit: string; hidden?: SafeHtml }): SafeHtml {
  return html`<form method="post" action="${o.action}" class="stack" aria-label="Sign in with password">
  ${csrfInput(o.csrf)}
  ${o.next ? html`<input type="hidden" name="next" value="${o.next}">` : ""}
  ${o.orgId ? html`<input type="hidden" name="organization_id" value="${o.orgId}">` : ""}
  ${o.hidden ?? ""}
  ${field({ label: "Email", name: "email", type: "email", value: o.email ?? "", required: true, autocomplete: "username" })}
  ${field({ label: "Password", name: "password", type: "password", required: true, autocomplete: "current-password" })}
  <button type="submit" class="btn btn-block">${o.submit}</button>
</form>`;
}

/** Single sign-on for the sign-in page: a button when the organization is known and configured, else a field for its id. */
export async function ssoForm(ctx: PageContext, o: { orgId?: string | null; next?: string }): Promise<SafeHtml> {
  const configured = o.orgId ? await getOidcSettings(ctx.deps, o.orgId) : null;
  if (o.orgId && configured) {
    let orgName = o.orgId;
    try {
      orgName = (await getOrganization(ctx.deps.db, o.orgId)).name;
    } catch {}
    return html`<form method="get" action="/sso/start" aria-label="Single sign-on">
  <input type="hidden" name="org" value="${o.orgId}">
  ${o.next ? html`<input type="hidden" name="next" value="${o.next}">` : ""}
  <button type="submit" class="btn btn-secondary btn-block">Continue with ${orgName} single sign-on</button>
</form>`;
  }
  return html`<form method="get" action="/sso/start" class="stack" aria-label="Single sign-on">
  ${o.next ? html`<input type="hidden" name="next" value="${o.next}">` : ""}
  ${field({
    label: "Organization ID",
    name: "org",
    id: "sso-org",
    required: true,
    value: o.orgId ?? "",
    placeholder: "org_…",
    hint: "Your admin can give you a direct single sign-on link instead.",
  })}
  <button type="submit" class="btn btn-secondary btn-block">Continue with single sign-on</button>
</form>`;
}
