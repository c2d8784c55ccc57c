// Sign-in and `svc login`: console sessions, who-am-I, browser-approved login requests, and
// API tokens for the CLI. Handlers pass plain values to the services in this folder.
import { ApiTokenList, IssuedApiToken, LoginApproved, LoginRequest, LoginRequestView, LoginToken, Me, Session } from "../../contract/admin-api.ts";
import { Elysia } from "elysia";
import { SvcError } from "../../contract/errors.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { clientIp, clientIpPlugin, requestOrigin, withRetryAfter } from "../http/rate-limit.ts";
import { acting } from "../audit/admin-events.ts";
import { getOrganization } from "../organizations/service.ts";
import { approveLoginRequest, createLoginRequest, describeLoginRequest, redeemLoginRequest } from "./login-requests.ts";
import { ApiTokenCreate, ApiTokenParams, LoginRequestApprove, LoginRequestCreate, LoginRequestParams, LoginRequestToken, SessionCreate } from "./model.ts";
import { authPlugin, sessionCookieName } from "./plugin.ts";
import { issueApiToken, listApiTokens, revokeOrgApiToken } from "./api-tokens.ts";
import { signIn, signOutSession } from "./sessions.ts";
import { NO_CONTENT } from "../http/openapi-complete.ts";

const tags = ["auth"];

/**
 * Login CSRF guard for the JSON sign-in: a cross-site page can post a form (urlencoded,
 * multipart or text/plain) without a preflight, but not `application/json`; and a browser's
 * `Origin`, when sent, must be the console's own.
 */
export function checkJsonSignIn(publicUrl: string, headers: Headers): void {
  const type = (headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/json") {
    throw new SvcError("validation_failed", "sign-in takes a JSON body: send content-type: application/json", {
      errors: [{ path: "/content-type", message: "must be application/json" }],
    });
  }
  const origin = headers.get("origin");
  if (origin !== null && origin !== new URL(publicUrl).origin) {
    throw new SvcError("forbidden", `sign-in from another site (origin ${origin}) is refused; sign in on ${new URL(publicUrl).origin}`);
  }
}

export function authRoutes(deps: ControlPlaneDeps) {
  const cookieName = sessionCookieName(deps.config);
  const sessionCookie = (value: string, maxAge: number) => ({
    value,
    httpOnly: true,
    sameSite: "lax" as const,
    secure: deps.config.secureCookies,
    path: "/",
    maxAge,
  });

  return new Elysia({ name: "auth-routes" })
    .use(authPlugin(deps))
    .use(clientIpPlugin())
    .post(
      "/auth/sessions",
      async ({ body, cookie, request, set }) => {
        const { raw, body: out } = await withRetryAfter(set, async () =>
          signIn(deps, {
            email: body.email,
            password: body.password,
            ...(body.organization_id ? { organizationId: body.organization_id } : {}),
            origin: requestOrigin(deps, request),
          }),
        );
        cookie[cookieName]!.set(sessionCookie(raw, deps.config.sessionTtlSeconds));
        return out;
      },
      {
        body: SessionCreate,
        response: Session,
        // transform runs before body validation, so a form post is refused with this reason.
        transform: ({ request }) => checkJsonSignIn(deps.config.publicUrl, request.headers),
        detail: { tags, summary: "Sign in to the console (sets the session cookie: `__Host-svc_session` on https, `svc_session` on plain-http loopback); JSON only, same-origin when Origin is sent" },
      },
    )
    .delete(
      "/auth/sessions",
      async ({ cookie, set, request }) => {
        const raw = cookie[cookieName]?.value;
        if (typeof raw === "string" && raw) await signOutSession(deps, raw, requestOrigin(deps, request));
        cookie[cookieName]!.set(sessionCookie("", 0));
        set.status = 204;
      },
      { member: true, detail: { tags, summary: "Sign out", responses: NO_CONTENT } },
    )
    .get(
      "/me",
      async ({ principal }) => {
        const org = await getOrganization(deps.db, principal.orgId);
        return {
          account: { id: principal.accountId, email: principal.email },
          organization: { id: org.id, name: org.name },
          role: principal.role,
          // when the caller's API token stops working (absent for console sessions)
          ...(principal.tokenExpiresAt ? { token_expires_at: new Date(principal.tokenExpiresAt).toISOString() } : {}),
        };
      },
      { member: true, response: Me, detail: { tags, summary: "The signed-in account, its organization and role" } },
    )
    .post(
      "/auth/login-requests",
      async ({ set, request }) =>
        withRetryAfter(set, async () => {
          const created = await createLoginRequest(deps, { clientIp: clientIp(deps, request) });
          set.status = 201;
          return created;
        }),
      { body: LoginRequestCreate, response: { 201: LoginRequest }, detail: { tags, summary: "Start `svc login`: a request to approve in the browser" } },
    )
    .get("/auth/login-requests/:id", async ({ params }) => describeLoginRequest(deps, params.id), {
      admin: true,
      params: LoginRequestParams,
      response: LoginRequestView,
      detail: { tags, summary: "A login request as the approval page shows it" },
    })
    .post("/auth/login-requests/:id/approve", async ({ params, principal }) => approveLoginRequest(deps, params.id, principal), {
      admin: true,
      params: LoginRequestParams,
      body: LoginRequestApprove,
      response: LoginApproved,
      detail: { tags, summary: "Approve a login request (console session of an owner or admin)" },
    })
    .post(
      "/auth/login-requests/:id/token",
      async ({ params, body, set, request }) => withRetryAfter(set, async () => redeemLoginRequest(deps, params.id, body.poll_secret, requestOrigin(deps, request))),
      {
        params: LoginRequestParams,
        body: LoginRequestToken,
        response: LoginToken,
        detail: { tags, summary: "Poll for the API token: 428 until approved, the token once, then 410" },
      },
    )
    .post(
      "/organizations/:org/api-tokens",
      async ({ principal, body, set }) => {
        const { id, token, expiresAt } = await issueApiToken(
          deps,
          { accountId: principal.accountId, orgId: principal.orgId, name: body.name, signIn: { at: principal.authenticatedAt ?? null, idp: principal.idp ?? null } },
          acting(deps, principal),
        );
        set.status = 201;
        return { id, token, expires_at: new Date(expiresAt).toISOString() };
      },
      { admin: true, body: ApiTokenCreate, response: { 201: IssuedApiToken }, detail: { tags, summary: "Issue an API token for the calling account (shown once)" } },
    )
    .get("/organizations/:org/api-tokens", async ({ principal }) => ({ api_tokens: await listApiTokens(deps.db, principal.orgId) }), {
      admin: true,
      response: ApiTokenList,
      detail: { tags, summary: "List the organization's API tokens (never the token itself)" },
    })
    .delete(
      "/organizations/:org/api-tokens/:id",
      async ({ principal, params, set }) => {
        await revokeOrgApiToken(deps, principal.orgId, params.id, acting(deps, principal));
        set.status = 204;
      },
      { admin: true, params: ApiTokenParams, detail: { tags, summary: "Revoke an API token of the organization (fails with 401 at once)", responses: NO_CONTENT } },
    );
}
