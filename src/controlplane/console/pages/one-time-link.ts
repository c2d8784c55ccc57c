// What the public pages of a one-time link share (the claim link, claim.ts; the chat-user
// invitation, invite.ts): the link is looked up first, and a link that cannot be used (used,
// expired, unknown) is answered with a page that says why, under a title for that case, and
// what to do instead; the organization is named by its name.
import { SvcError } from "../../../contract/errors.ts";
import { getOrganization } from "../../organizations/service.ts";
import { type PageContext, type PageResult, page } from "../context.ts";
import type { SafeHtml } from "../html.ts";
import { publicShell } from "../layout.ts";

/** The organization's name, or its id when it cannot be read. */
export async function orgName(ctx: PageContext, orgId: string): Promise<string> {
  try {
    return (await getOrganization(ctx.deps.db, orgId)).name;
  } catch {
    return orgId;
  }
}

export type LinkRefusal = {
  /** A title per error code (claim_used, invite_expired, not_found, …). */
  titles: Record<string, string>;
  /** The title for any other refusal. */
  fallback: string;
  /** What to do instead. */
  body: SafeHtml;
};

/** The page for a link that cannot be used: the error's own message under its case's title. */
export function refusedLink(r: LinkRefusal, e: SvcError): PageResult {
  return page(publicShell({ title: r.titles[e.code] ?? r.fallback, error: e.message, body: r.body }), e.status);
}

/** Looks the link up; a refusal (SvcError) comes back as its page, anything else is thrown. */
export async function inspectLink<T>(r: LinkRefusal, lookup: () => Promise<T>): Promise<T | PageResult> {
  try {
    return await lookup();
  } catch (e) {
    if (e instanceof SvcError) return refusedLink(r, e);
    throw e;
  }
}

/** Whether `inspectLink` answered with a page rather than the link. */
export function isPage<T extends object>(x: T | PageResult): x is PageResult {
  return "kind" in x;
}
