// The console's page shells and the small components every page uses: the signed-in shell
// (top bar, navigation landmark, main), the public shell for sign-in and claim links,
// banners, form fields, badges and times. Markup only; styles are in assets/console.css.
import { createHash } from "node:crypto";
import css from "./assets/console.css" with { type: "text" };
import script from "./assets/console.js" with { type: "text" };
import type { ConsoleSession, PageContext } from "./context.ts";
import { CSRF_FIELD } from "./csrf.ts";
import { type Renderable, type SafeHtml, html } from "./html.ts";

const version = (text: string) => createHash("sha256").update(text).digest("hex").slice(0, 12);
export const ASSETS = {
  css: { path: `/console/assets/console.${version(css)}.css`, body: css, type: "text/css; charset=utf-8" },
  js: { path: `/console/assets/console.${version(script)}.js`, body: script, type: "text/javascript; charset=utf-8" },
} as const;

export type NavKey =
  | "overview"
  | "agents"
  | "installations"
  | "model-profiles"
  | "tool-servers"
  | "policies"
  | "users"
  | "groups"
  | "identities"
  | "members"
  | "audit"
  | "admin-activity"
  | "audit-keys"
  | "siem-sinks"
  | "usage"
  | "settings"
  | "none";

const NAV: Array<{ heading: string; items: Array<{ key: NavKey; href: string; label: string }> }> = [
  { heading: "", items: [{ key: "overview", href: "/", label: "Overview" }] },
  {
    heading: "Runtime",
    items: [
      { key: "agents", href: "/agents", label: "Agents" },
      { key: "installations", href: "/installations", label: "Installations" },
      { key: "model-profiles", href: "/model-profiles", label: "Model profiles" },
      { key: "tool-servers", href: "/tool-servers", label: "Tool servers" },
      { key: "policies", href: "/policies", label: "Policies" },
    ],
  },
  {
    heading: "Directory",
    items: [
      { key: "users", href: "/users", label: "Users" },
      { key: "groups", href: "/groups", label: "Groups" },
      { key: "identities", href: "/identities", label: "Linked identities" },
      { key: "members", href: "/members", label: "Console members" },
    ],
  },
  {
    heading: "Audit",
    items: [
      { key: "audit", href: "/audit", label: "Audit records" },
      { key: "admin-activity", href: "/audit/admin", label: "Admin activity" },
      { key: "audit-keys", href: "/audit-keys", label: "Audit keys" },
      { key: "siem-sinks", href: "/siem-sinks", label: "SIEM sinks" },
      { key: "usage", href: "/usage", label: "Usage and budgets" },
    ],
  },
  { heading: "", items: [{ key: "settings", href: "/settings", label: "Settings" }] },
];

export type Banners = { notice?: string | null; error?: string | null };

function head(title: string): SafeHtml {
  return html`<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>${title} · svc console</title>
<link rel="stylesheet" href="${ASSETS.css.path}">
<script src="${ASSETS.js.path}" defer></script>
</head>`;
}

export function banners(b: Banners): SafeHtml {
  return html`${b.error ? html`<div class="banner banner-error" role="alert"><strong>Refused.</strong> ${b.error}</div>` : ""}${
    b.notice ? html`<div class="banner banner-ok" role="status">${b.notice}</div>` : ""
  }`;
}

export function csrfInput(token: string): SafeHtml {
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${token}">`;
}

function topbar(session: ConsoleSession): SafeHtml {
  const p = session.principal;
  const switcher =
    session.orgs.length > 1
      ? html`<form method="post" action="/switch-org" class="org-switch">
  ${csrfInput(session.csrfToken)}
  <label for="org-switch" class="visually-hidden">Organization</label>
  <select id="org-switch" name="organization_id" data-autosubmit>
    ${session.orgs.map((o) => html`<option value="${o.orgId}" ${o.orgId === p.orgId ? html`selected` : ""}>${o.name}</option>`)}
  </select>
  <button type="submit" class="btn btn-small" data-hide-with-js>Switch</button>
</form>`
      : html`<span class="org-name">${session.orgName}</span>`;
  return html`<header class="topbar">
  <a class="brand" href="/"><span class="brand-mark" aria-hidden="true">◆</span> svc console</a>
  <div class="topbar-org">${switcher}</div>
  <div class="topbar-user">
    <span class="who"><span class="visually-hidden">Signed in as </span>${p.email} <span class="badge badge-muted">${p.role}</span></span>
    <form method="post" action="/sign-out">${csrfInput(session.csrfToken)}<button type="submit" class="btn btn-small btn-ghost">Sign out</button></form>
  </div>
</header>`;
}

function nav(active: NavKey): SafeHtml {
  return html`<nav class="sidenav" aria-label="Console">
${NAV.map(
  (section) => html`<div class="nav-section">${section.heading ? html`<h2 class="nav-heading">${section.heading}</h2>` : ""}<ul>
${section.items.map((i) => html`<li><a href="${i.href}" ${i.key === active ? html`aria-current="page"` : ""}>${i.label}</a></li>`)}</ul></div>`,
)}
</nav>`;
}

/** The signed-in shell; members see no navigation (they have no admin pages). */
export function shell(session: ConsoleSession, opts: { title: string; active: NavKey; body: Renderable; lead?: Renderable } & Banners): SafeHtml {
  const admin = session.principal.role === "owner" || session.principal.role === "admin";
  return html`<!doctype html>
<html lang="en">
${head(opts.title)}
<body>
<a class="skip-link" href="#main">Skip to main content</a>
${topbar(session)}
<div class="layout ${admin ? "" : "layout-single"}">
${admin ? nav(opts.active) : ""}
<main id="main" tabindex="-1">
<h1>${opts.title}</h1>
${opts.lead ? html`<p class="lead">${opts.lead}</p>` : ""}
${banners(opts)}
${opts.body}
</main>
</div>
</body>
</html>`;
}

/** The shell for pages shown before sign-in (sign-in, claim links, errors). */
export function publicShell(opts: { title: string; body: Renderable; wide?: boolean } & Banners): SafeHtml {
  return html`<!doctype html>
<html lang="en">
${head(opts.title)}
<body class="public">
<a class="skip-link" href="#main">Skip to main content</a>
<header class="public-header"><a class="brand" href="/"><span class="brand-mark" aria-hidden="true">◆</span> svc console</a></header>
<main id="main" tabindex="-1" class="card ${opts.wide ? "card-wide" : ""}">
<h1>${opts.title}</h1>
${banners(opts)}
${opts.body}
</main>
</body>
</html>`;
}

/** 403 for members (and anyone) trying admin work: said plainly, with what they can do. */
export function forbiddenPage(ctx: PageContext & { session: ConsoleSession }): SafeHtml {
  return shell(ctx.session, {
    title: "Admin access needed",
    active: "none",
    error: `Your role in ${ctx.session.orgName} is "${ctx.session.principal.role}". Only owners and admins can do admin work; ask one of them if you need access.`,
    body: html`<p>As a member you can sign in and open claim links sent to you by the chat front end, which link your chat account to your service user.</p>`,
  });
}

export function ownerOnlyPage(ctx: PageContext & { session: ConsoleSession }, what: string): SafeHtml {
  return shell(ctx.session, {
    title: "Owner access needed",
    active: "none",
    error: `Only an owner of ${ctx.session.orgName} can ${what}; your role is "${ctx.session.principal.role}". Nothing was changed.`,
    body: html`<p><a href="/settings">Back to settings</a></p>`,
  });
}

// ── components ─────────────────────────────────────────────────────────────────────────

export type FieldOptions = {
  label: string;
  name: string;
  type?: string;
  value?: string | null;
  required?: boolean;
  hint?: Renderable;
  pattern?: string;
  autocomplete?: string;
  placeholder?: string;
  id?: string;
  attrs?: SafeHtml;
  /** Search forms leave out the "(optional)" mark: every filter is optional. */
  quiet?: boolean;
  /** Instead of "(optional)": when the field is required only sometimes, say when ("(required for a webhook)"). */
  mark?: string;
};

export function field(o: FieldOptions): SafeHtml {
  const id = o.id ?? `f-${o.name}`;
  const hintId = `${id}-hint`;
  return html`<div class="field">
  <label for="${id}">${o.label}${o.required || o.quiet ? "" : html` <span class="optional">${o.mark ?? "(optional)"}</span>`}</label>
  <input id="${id}" name="${o.name}" type="${o.type ?? "text"}" value="${o.value ?? ""}" ${o.required ? html`required` : ""} ${
    o.pattern ? html`pattern="${o.pattern}"` : ""
  } ${o.autocomplete ? html`autocomplete="${o.autocomplete}"` : ""} ${o.placeholder ? html`placeholder="${o.placeholder}"` : ""} ${o.hint ? html`aria-describedby="${hintId}"` : ""} ${o.attrs ?? ""}>
  ${o.hint ? html`<p class="hint" id="${hintId}">${o.hint}</p>` : ""}
</div>`;
}

export function selectField(o: {
  label: string;
  name: string;
  options: Array<{ value: string; label: string }>;
  value?: string | null;
  required?: boolean;
  hint?: Renderable;
  id?: string;
  quiet?: boolean;
}): SafeHtml {
  const id = o.id ?? `f-${o.name}`;
  return html`<div class="field">
  <label for="${id}">${o.label}${o.required || o.quiet ? "" : html` <span class="optional">(optional)</span>`}</label>
  <select id="${id}" name="${o.name}" ${o.required ? html`required` : ""} ${o.hint ? html`aria-describedby="${id}-hint"` : ""}>
    ${o.options.map((opt) => html`<option value="${opt.value}" ${opt.value === (o.value ?? "") ? html`selected` : ""}>${opt.label}</option>`)}
  </select>
  ${o.hint ? html`<p class="hint" id="${id}-hint">${o.hint}</p>` : ""}
</div>`;
}

/** One filter of a search form (the audit and admin-activity pages): a quiet select of [value, label] choices. */
export function searchSelect(label: string, name: string, value: string | null | undefined, choices: ReadonlyArray<readonly [string, string]>): SafeHtml {
  return selectField({ label, name, value, quiet: true, options: choices.map(([v, l]) => ({ value: v, label: l })) });
}

export type Tone = "ok" | "warn" | "bad" | "muted" | "info";

export function badge(text: string, tone: Tone = "muted"): SafeHtml {
  return html`<span class="badge badge-${tone}">${text}</span>`;
}

/** An ISO time as UTC text in a <time> element (the script shows it in local time). */
export function time(iso: string | null | undefined, empty = "never"): SafeHtml {
  if (!iso) return html`<span class="muted">${empty}</span>`;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return html`${iso}`;
  const text = `${d.toISOString().slice(0, 19).replace("T", " ")} UTC`;
  return html`<time datetime="${d.toISOString()}">${text}</time>`;
}

export function code(text: string | null | undefined): SafeHtml {
  return text ? html`<code>${text}</code>` : html`<span class="muted">—</span>`;
}

export function empty(text: Renderable): SafeHtml {
  return html`<p class="empty">${text}</p>`;
}

/** A table inside a scrollable, labelled region so wide tables stay keyboard-reachable. */
export function dataTable(caption: string, headers: string[], rows: SafeHtml[], emptyText: string): SafeHtml {
  if (rows.length === 0) return empty(emptyText);
  return html`<div class="table-wrap" role="region" aria-label="${caption}" tabindex="0">
<table>
<caption class="visually-hidden">${caption}</caption>
<thead><tr>${headers.map((h) => html`<th scope="col">${h}</th>`)}</tr></thead>
<tbody>${rows}</tbody>
</table>
</div>`;
}

export function section(title: string, body: Renderable, opts: { id?: string; actions?: Renderable } = {}): SafeHtml {
  const id = opts.id ?? `s-${title.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
  return html`<section class="panel" aria-labelledby="${id}">
<div class="panel-head"><h2 id="${id}">${title}</h2>${opts.actions ?? ""}</div>
${body}
</section>`;
}
