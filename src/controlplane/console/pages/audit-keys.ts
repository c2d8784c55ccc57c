// Customer audit-encryption keys (age X25519 recipients): register, list, disable. The
// browser checks the `age1` prefix (pattern attribute + a small script); the service checks
// that the key parses as an X25519 recipient. Disabling is permanent, and the confirmation
// page says so before anything changes.
import type { AuditKey } from "../../../contract/admin-api.ts";
import { type PageContext, type PageResult, page, redirect } from "../context.ts";
import { requireAdmin } from "../guard.ts";
import { html, path } from "../html.ts";
import { badge, code, csrfInput, dataTable, field, section, shell, time } from "../layout.ts";
import { RECOVERY_NOTICES, recoverySection } from "./audit-recovery.ts";
import { noticesArea } from "./notices.ts";
import { joinErrors, list, problemText } from "./shared.ts";
import { TAMPER_NOTICES, tamperSection } from "./tamper-evidence.ts";

export type { AuditKey } from "../../../contract/admin-api.ts";
type FormState = { error?: string | null; values?: Record<string, string>; status?: number };

/** The browser-side check: starts with age1, no spaces (the service does the real parsing). */
export const AGE_PREFIX_PATTERN = "age1[^\\s]+";

const NOTICES: Record<string, string> = {
  registered: "Key registered. New audit records are encrypted to it.",
  disabled: "Key disabled. It receives no new records; records already encrypted to it keep its id.",
  ...RECOVERY_NOTICES,
  ...TAMPER_NOTICES,
};

export async function getAuditKeys(pc: PageContext, state: FormState = {}): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const errors: string[] = [];
  const keys = await list<AuditKey>(ctx, "/audit-encryption-keys", "keys", errors);
  const active = keys.filter((k) => k.status === "active").length;
  const v = state.values ?? {};
  const rows = keys.map(
    (k) => html`<tr>
  <td><strong>${k.name}</strong><br><span class="muted mono">${k.id}</span></td>
  <td>${code(k.public_key)}</td>
  <td>${k.status === "active" ? badge("active", "ok") : badge(k.status, "muted")}${k.kind === "escrow" ? html` ${badge("escrow", "warn")}` : ""}</td>
  <td>${time(k.created_at)}${k.disabled_at ? html`<br><span class="muted">disabled ${time(k.disabled_at)}</span>` : ""}${k.disabled_reason ? html`<br><span class="muted" data-disabled-reason>${k.disabled_reason}</span>` : ""}</td>
  <td>${k.status === "active" && k.kind !== "escrow" ? html`<a class="btn btn-small btn-secondary" href="${path`/audit-keys/${k.id}/disable`}" aria-label="Disable key ${k.name}">Disable…</a>` : ""}</td>
</tr>`,
  );
  const form = html`<form method="post" action="/audit-keys" class="stack" data-age-form>
  ${csrfInput(ctx.session.csrfToken)}
  ${field({ label: "Name", name: "name", value: v.name, required: true, placeholder: "security team 2025" })}
  ${field({
    label: "Public key (age recipient)",
    name: "public_key",
    value: v.public_key,
    required: true,
    pattern: AGE_PREFIX_PATTERN,
    autocomplete: "off",
    placeholder: "age1…",
    hint: html`The recipient line from <code>age-keygen</code> or <code>svc audit keys create</code>, starting with <code>age1</code>. Never paste the private key (<code>AGE-SECRET-KEY-1…</code>).`,
    attrs: html`data-age-recipient spellcheck="false" title="An age public key starts with age1"`,
  })}
  <div class="actions"><button type="submit" class="btn">Register key</button></div>
</form>`;
  const recovery = await recoverySection(ctx, errors, state.values ?? {});
  const tamper = await tamperSection(ctx, errors);
  const notices = await noticesArea(ctx, "/audit-keys#recovery");
  const done = ctx.url.searchParams.get("done");
  const statusLine =
    active > 0
      ? html`<div class="banner banner-info">Audit arguments are <strong>encrypted</strong> to ${active === 1 ? "1 active key" : `${active} active keys`}.</div>`
      : html`<div class="banner banner-warn">No active key: new audit records are <strong>digest-only</strong> (arguments are not stored).</div>`;
  return page(
    shell(ctx.session, {
      title: "Audit keys",
      active: "audit-keys",
      lead: "Customer-held age keys that audit arguments are encrypted to. The service holds only the public keys and never decrypts.",
      notice: done ? (NOTICES[done] ?? null) : null,
      error: state.error ?? joinErrors(errors),
      body: html`${notices}${statusLine}${section("Keys", dataTable("Audit keys", ["Key", "Public key", "Status", "Created", ""], rows, "No keys registered."))}${section("Register a key", form)}${recovery}${tamper}`,
    }),
    state.status ?? 200,
  );
}

export async function postAuditKey(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const f = ctx.form;
  const res = await ctx.api.send<AuditKey>("POST", ctx.api.org("/audit-encryption-keys"), { name: (f.name ?? "").trim(), public_key: (f.public_key ?? "").trim() });
  if (!res.ok) return getAuditKeys(pc, { error: problemText(res.problem), values: f, status: res.problem.status });
  return redirect("/audit-keys?done=registered");
}

export async function getDisableKey(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const got = await ctx.api.get<AuditKey>(ctx.api.org(path`/audit-encryption-keys/${ctx.params.id ?? ""}`));
  if (!got.ok)
    return page(shell(ctx.session, { title: "Disable audit key", active: "audit-keys", error: got.problem.detail, body: html`<p><a href="/audit-keys">All keys</a></p>` }), got.problem.status);
  const k = got.data;
  if (k.status !== "active") return redirect("/audit-keys");
  return page(
    shell(ctx.session, {
      title: `Disable key "${k.name}"?`,
      active: "audit-keys",
      body: html`<section class="panel" aria-labelledby="confirm-h">
<h2 id="confirm-h">Disabling is permanent</h2>
<div class="banner banner-warn" role="note"><strong>This cannot be undone.</strong> A disabled key can never be enabled again. It stays listed, receives no new audit records, and records already encrypted to it are not re-encrypted.</div>
<dl class="props"><dt>Key</dt><dd>${k.name} ${code(k.id)}</dd><dt>Public key</dt><dd>${code(k.public_key)}</dd></dl>
<form method="post" action="${path`/audit-keys/${k.id}/disable`}" class="actions">
  ${csrfInput(ctx.session.csrfToken)}
  <button type="submit" class="btn btn-danger">Disable permanently</button>
  <a class="btn btn-ghost" href="/audit-keys">Cancel</a>
</form>
</section>`,
    }),
  );
}

export async function postDisableKey(pc: PageContext): Promise<PageResult> {
  const ctx = requireAdmin(pc);
  const res = await ctx.api.send<AuditKey>("POST", ctx.api.org(`/audit-encryption-keys/${encodeURIComponent(ctx.params.id ?? "")}:disable`));
  if (!res.ok) return getAuditKeys(pc, { error: problemText(res.problem), status: res.problem.status });
  return redirect("/audit-keys?done=disabled");
}
