// The consent pages of per-user OAuth to MCP servers (issue 32): the one-time link a chat user
// got (as an MCP URL elicitation, to them alone) sends the browser on to the tool server's
// authorization server; its answer comes back to the callback, which exchanges the code and
// keeps the tokens (tool-oauth/service.ts). Neither page needs a console session: chat users
// often have none, and the link itself (one-time, 15 minutes, hashed at rest) names the user.
import { SvcError } from "../../../contract/errors.ts";
import { finishConsent, openConsent } from "../../tool-oauth/service.ts";
import { type PageContext, type PageResult, page, redirect } from "../context.ts";
import { html } from "../html.ts";
import { publicShell } from "../layout.ts";

function refused(e: unknown, ctx: PageContext): PageResult {
  const known = e instanceof SvcError;
  if (!known) ctx.deps.log.error("tool server consent failed", { error: ((e as Error).message ?? String(e)).slice(0, 300) });
  const status = known ? (e.status >= 500 ? 502 : e.status) : 502;
  return page(
    publicShell({
      title: "Connecting the tool did not work",
      error: known ? e.message : "The tool server could not be reached; the control plane log has the details.",
      body: html`<p>Go back to the chat and call the tool again for a new link.</p>`,
    }),
    status,
  );
}

export async function getToolConsent(ctx: PageContext): Promise<PageResult> {
  try {
    return redirect(await openConsent(ctx.deps, ctx.params.token ?? ""));
  } catch (e) {
    return refused(e, ctx);
  }
}

export async function getToolConsentCallback(ctx: PageContext): Promise<PageResult> {
  const q = ctx.url.searchParams;
  try {
    const done = await finishConsent(ctx.deps, { state: q.get("state") ?? undefined, code: q.get("code") ?? undefined, error: q.get("error") ?? undefined });
    return page(
      publicShell({
        title: "Tool connected",
        body: html`<p>svc may now call the tool server <b>${done.server}</b> as <b>${done.subject ?? "you"}</b> for your chats. Go back to the chat and ask again.</p>`,
      }),
    );
  } catch (e) {
    return refused(e, ctx);
  }
}
