// The console's one confirmation step before a destructive action (delete a policy or a SIEM
// sink, revoke an API token, remove single sign-on): the list's button is a link ("Delete…")
// to a page that says what will happen and holds the only form that does it, with Cancel
// beside it. Works without JavaScript; the action itself stays a CSRF-checked POST.
import { type AdminContext, type PageResult, page } from "../context.ts";
import { html, type Renderable } from "../html.ts";
import { csrfInput, type NavKey, shell } from "../layout.ts";

export type Confirmation = {
  /** The page's title, a question: `Delete policy "chat"?` */
  title: string;
  active: NavKey;
  /** What happens, in one heading: "Deleting a policy takes effect at the next bundle poll". */
  heading: string;
  /** The consequences a person must know before saying yes. */
  warning: Renderable;
  /** What is about to be acted on, as label and value. */
  facts: Array<[string, Renderable]>;
  /** The form's POST target and its button's words. */
  action: string;
  button: string;
  /** Where Cancel goes. */
  back: string;
};

export function confirmationPage(ctx: AdminContext, c: Confirmation): PageResult {
  return page(
    shell(ctx.session, {
      title: c.title,
      active: c.active,
      body: html`<section class="panel" aria-labelledby="confirm-h">
<h2 id="confirm-h">${c.heading}</h2>
<div class="banner banner-warn" role="note">${c.warning}</div>
<dl class="props">${c.facts.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>
<form method="post" action="${c.action}" class="actions">
  ${csrfInput(ctx.session.csrfToken)}
  <button type="submit" class="btn btn-danger">${c.button}</button>
  <a class="btn btn-ghost" href="${c.back}">Cancel</a>
</form>
</section>`,
    }),
  );
}
