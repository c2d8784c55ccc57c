// The service console, served by the control plane itself: server-rendered pages built from
// the same JSON admin API the CLI uses (called in-process through `api`), plus the pages that
// come before a session (sign-in, single sign-on, claim links). Every POST is CSRF-checked
// here before its handler runs: against the session's token for signed-in forms, against the
// double-submit cookie for sign-in forms. Pages work without JavaScript.
import { loggableError } from "../db/errors.ts";
import { Elysia } from "elysia";
import { markIdentified } from "../auth/plugin.ts";
import { markPageRefused } from "../audit/refusals.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { requestOrigin } from "../http/rate-limit.ts";
import type { ApiHandle } from "./api-client.ts";
import { type PageContext, PageExit, type PageResult, page } from "./context.ts";
import { parseCookies, serializeCookie } from "./cookies.ts";
import { csrfMatches, newPresessionToken, presessionCookieName } from "./csrf.ts";
import { loggablePath } from "../http/log-path.ts";
import { html } from "./html.ts";
import { ASSETS, publicShell } from "./layout.ts";
import { getAgents, postAgent } from "./pages/agents.ts";
import { getAuditKeys, getDisableKey, postAuditKey, postDisableKey } from "./pages/audit-keys.ts";
import { getDeleteSiemSink, getSiemSinks, postDeleteSiemSink, postSiemSink } from "./pages/siem-sinks.ts";
import { postRecoveryApprove, postRecoveryFetch, postRecoveryRequest } from "./pages/audit-recovery.ts";
import { postCheckpointNow, postVerifyNow } from "./pages/tamper-evidence.ts";
import { getAudit } from "./pages/audit.ts";
import { getAdminActivity } from "./pages/admin-activity.ts";
import { postDismissNotice } from "./pages/notices.ts";
import { getPolicyEdit, postPolicyEdit } from "./pages/policy-edit.ts";
import { getAuditExport, getAuditRecord } from "./pages/audit-record.ts";
import { getUsage } from "./pages/usage.ts";
import { getClaim, postClaim } from "./pages/claim.ts";
import { getToolConsent, getToolConsentCallback, postToolConsent } from "./pages/tool-consent.ts";
import { getInvite, postInvite } from "./pages/invite.ts";
import { getGroups, getIdentities, getMembers, getRemoveMember, getRevokeToken, getUsers, postMember, postRemoveMember, postRevokeToken, postUserDisable, postUserEnable } from "./pages/directory.ts";
import { getInstallation, getInstallations } from "./pages/installations.ts";
import { getLoginApprove, postLoginApprove } from "./pages/login-approve.ts";
import { getModelProfiles } from "./pages/model-profiles.ts";
import { getOverview } from "./pages/overview.ts";
import { getToolServer, getToolServers } from "./pages/tool-servers.ts";
import { getPolicies, getPolicyDelete, postPolicy, postPolicyDelete } from "./pages/policies.ts";
import { getSettings, getSsoDelete, postEscrow, postSso, postSsoDelete } from "./pages/settings.ts";
import { getSignIn, getSsoCallback, getSsoStart, postSignIn, postSignOut, postSwitchOrg } from "./pages/sign-in.ts";
import { loadSession } from "./session.ts";

/** Which token a form must echo in `_csrf`; "own" handlers check it themselves (claim page). */
export type CsrfMode = "session" | "presession" | "own";

type Handler = (ctx: PageContext, cookies: Record<string, string>) => Promise<PageResult> | PageResult;

export const SECURITY_HEADERS: Record<string, string> = {
  "content-security-policy": "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  // Claim links carry their token in the path: never leak it in a Referer.
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
};

function formValues(body: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!body || typeof body !== "object") return out;
  for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
    const first = Array.isArray(v) ? v[0] : v;
    if (typeof first === "string") out[k] = first;
  }
  return out;
}

function toResponse(result: PageResult, cookies: string[]): Response {
  const headers = new Headers(SECURITY_HEADERS);
  for (const c of cookies) headers.append("set-cookie", c);
  if (result.kind === "download") {
    // A file streamed from the admin API (the audit CSV): its own type and disposition.
    for (const k of ["content-type", "content-disposition", "cache-control"]) {
      const v = result.response.headers.get(k);
      if (v) headers.set(k, v);
    }
    return new Response(result.response.body, { status: result.response.status, headers });
  }
  if (result.kind === "redirect") {
    headers.set("location", result.location);
    return new Response(null, { status: 303, headers });
  }
  headers.set("content-type", "text/html; charset=utf-8");
  return new Response(result.body.value, { status: result.status, headers });
}

function csrfRefused(): PageResult {
  return page(
    publicShell({
      title: "Form expired",
      error: "This form was sent without a valid security token (it may have expired, or come from another site). Nothing was changed.",
      body: html`<p>Go back, reload the page and try again. <a href="/">Console home</a></p>`,
    }),
    403,
  );
}

export function consoleRoutes(deps: ControlPlaneDeps, api: ApiHandle) {
  const presessionCookie = presessionCookieName(deps.config);
  const run =
    (handler: Handler, csrf: CsrfMode | null = null) =>
    async ({ request, params, body }: { request: Request; params: Record<string, string>; body?: unknown }): Promise<Response> => {
      const cookies = parseCookies(request.headers.get("cookie"));
      const setCookies: string[] = [];
      let presession = cookies[presessionCookie];
      if (!presession || presession.length < 16) {
        presession = newPresessionToken();
        setCookies.push(serializeCookie(presessionCookie, presession, { secure: deps.config.secureCookies }));
      }
      const ctx: PageContext = {
        deps,
        handle: api,
        request,
        url: new URL(request.url),
        params: params ?? {},
        form: request.method === "POST" ? formValues(body) : {},
        session: await loadSession(deps, cookies),
        presession,
        cookies: setCookies,
      };
      // A page refused to this person (403) is an admin-trail refusal in their organization (app.ts).
      if (ctx.session) markIdentified(request, { ...ctx.session.principal, ...requestOrigin(deps, request) });
      let result: PageResult;
      try {
        if (csrf === "session" && !(ctx.session && csrfMatches(ctx.session.csrfToken, ctx.form._csrf))) {
          if (ctx.session) markPageRefused(request);
          result = ctx.session ? csrfRefused() : { kind: "redirect", location: "/sign-in" };
        } else if (csrf === "presession" && !csrfMatches(cookies[presessionCookie], ctx.form._csrf)) {
          result = csrfRefused();
        } else {
          result = await handler(ctx, cookies);
        }
      } catch (e) {
        if (e instanceof PageExit) result = e.result;
        else {
          // The path may be a claim link: its token never reaches the log.
          deps.log.error("console page failed", { path: loggablePath(ctx.url.pathname), error: loggableError(e) });
          result = page(
            publicShell({ title: "Something went wrong", error: "The page could not be shown; the control plane log has the details.", body: html`<p><a href="/">Console home</a></p>` }),
            500,
          );
        }
      }
      return toResponse(result, ctx.cookies);
    };

  const asset = (a: { body: string; type: string }) => () =>
    new Response(a.body, { headers: { "content-type": a.type, "cache-control": "public, max-age=31536000, immutable", "x-content-type-options": "nosniff" } });

  return (
    new Elysia({ name: "console-routes" })
      .get(ASSETS.css.path, asset(ASSETS.css))
      .get(ASSETS.js.path, asset(ASSETS.js))
      // before a session
      .get("/sign-in", run(getSignIn))
      .post("/sign-in", run(postSignIn, "presession"))
      .post("/sign-out", run(postSignOut, "session"))
      .post("/switch-org", run(postSwitchOrg, "session"))
      .get("/sso/start", run(getSsoStart))
      .get("/sso/callback", run(getSsoCallback))
      .get("/claim/:token", run(getClaim))
      .get("/oauth/tool-servers/consent/:token", run(getToolConsent))
      .post("/oauth/tool-servers/consent/:token", run(postToolConsent, "presession"))
      .get("/oauth/tool-servers/callback", run(getToolConsentCallback))
      .post("/claim/:token", run(postClaim, "own"))
      .get("/invite/:token", run(getInvite))
      .post("/invite/:token", run(postInvite, "own"))
      .get("/login/approve", run(getLoginApprove))
      .post("/login/approve", run(postLoginApprove, "session"))
      // admin pages
      .get("/", run(getOverview))
      .get(
        "/agents",
        run(async (c) => getAgents(c)),
      )
      .post("/agents", run(postAgent, "session"))
      .get("/installations", run(getInstallations))
      .get("/installations/:id", run(getInstallation))
      .get("/model-profiles", run(getModelProfiles))
      .get("/tool-servers", run(getToolServers))
      .get("/tool-servers/:id", run(getToolServer))
      .get(
        "/policies",
        run(async (c) => getPolicies(c)),
      )
      .post("/policies", run(postPolicy, "session"))
      .get("/policies/:id/delete", run(getPolicyDelete))
      .post("/policies/:id/delete", run(postPolicyDelete, "session"))
      .get(
        "/policies/:id/edit",
        run(async (c) => getPolicyEdit(c)),
      )
      .post("/policies/:id", run(postPolicyEdit, "session"))
      .get(
        "/users",
        run(async (c) => getUsers(c)),
      )
      .post("/users/:id/disable", run(postUserDisable, "session"))
      .post("/users/:id/enable", run(postUserEnable, "session"))
      .get("/groups", run(getGroups))
      .get("/identities", run(getIdentities))
      .get(
        "/members",
        run(async (c) => getMembers(c)),
      )
      .post("/members", run(postMember, "session"))
      .get("/members/:id/remove", run(getRemoveMember))
      .post("/members/:id/remove", run(postRemoveMember, "session"))
      .get("/api-tokens/:id/revoke", run(getRevokeToken))
      .post("/api-tokens/:id/revoke", run(postRevokeToken, "session"))
      .get("/audit", run(getAudit))
      .get("/audit/export.csv", run(getAuditExport))
      .get("/audit/admin", run(getAdminActivity))
      .get("/audit/:id", run(getAuditRecord))
      .get("/usage", run(getUsage))
      .get(
        "/audit-keys",
        run(async (c) => getAuditKeys(c)),
      )
      .get(
        "/siem-sinks",
        run(async (c) => getSiemSinks(c)),
      )
      .post("/siem-sinks", run(postSiemSink, "session"))
      .get("/siem-sinks/:id/delete", run(getDeleteSiemSink))
      .post("/siem-sinks/:id/delete", run(postDeleteSiemSink, "session"))
      .post("/audit-keys", run(postAuditKey, "session"))
      .get("/audit-keys/:id/disable", run(getDisableKey))
      .post("/audit-keys/:id/disable", run(postDisableKey, "session"))
      .post(
        "/audit-keys/verify",
        run(async (c) => postVerifyNow(c, getAuditKeys), "session"),
      )
      .post(
        "/audit-keys/checkpoint",
        run(async (c) => postCheckpointNow(c, getAuditKeys), "session"),
      )
      .post(
        "/audit-recovery",
        run(async (c) => postRecoveryRequest(c, getAuditKeys), "session"),
      )
      .post(
        "/audit-recovery/:id/approve",
        run(async (c) => postRecoveryApprove(c, getAuditKeys), "session"),
      )
      .post(
        "/audit-recovery/:id/fetch",
        run(async (c) => postRecoveryFetch(c, getAuditKeys), "session"),
      )
      .post("/notices/:id/dismiss", run(postDismissNotice, "session"))
      .get(
        "/settings",
        run(async (c) => getSettings(c)),
      )
      .post("/settings/escrow", run(postEscrow, "session"))
      .post("/settings/sso", run(postSso, "session"))
      .get("/settings/sso/delete", run(getSsoDelete))
      .post("/settings/sso/delete", run(postSsoDelete, "session"))
  );
}
