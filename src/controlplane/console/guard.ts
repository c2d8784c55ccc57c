// The server-side role check for admin pages: not signed in → the sign-in page (then back);
// signed in as a member → 403 page. Runs before any API call; the API checks roles again.
// A few settings are the owners' alone (single sign-on): `requireOwner`.
import { type AdminContext, type PageContext, PageExit, apiFor, isAdmin, page, requireSignedIn } from "./context.ts";
import { forbiddenPage, ownerOnlyPage } from "./layout.ts";
import { loggablePath } from "../http/log-path.ts";
import { markPageRefused } from "../audit/refusals.ts";

export function requireAdmin(ctx: PageContext): AdminContext {
  const c = requireSignedIn(ctx);
  if (!isAdmin(c.session)) {
    c.deps.log.warn("console admin page refused", { path: loggablePath(ctx.url.pathname), role: c.session.principal.role });
    markPageRefused(ctx.request);
    throw new PageExit(page(forbiddenPage(c), 403));
  }
  return { ...c, api: apiFor(c) };
}

/** Owner-only forms (single sign-on): an admin gets the 403 page, with the reason. */
export function requireOwner(ctx: PageContext, what: string): AdminContext {
  const c = requireAdmin(ctx);
  if (c.session.principal.role !== "owner") {
    c.deps.log.warn("console owner action refused", { path: loggablePath(ctx.url.pathname), role: c.session.principal.role });
    markPageRefused(ctx.request);
    throw new PageExit(page(ownerOnlyPage(c, what), 403));
  }
  return c;
}
