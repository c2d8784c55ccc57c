// Console sessions: the `svc_session` cookie resolved through the auth folder's session
// functions, and signing an account in to one of its organizations.
import { SESSION_COOKIE } from "../auth/plugin.ts";
import { type AuthMethod, createSession, deleteSession, membership, membershipsOf, principalFromSession } from "../auth/service.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { getOrganization } from "../organizations/service.ts";
import type { ConsoleSession } from "./context.ts";
import { clearCookie, serializeCookie } from "./cookies.ts";

export function loadSession(deps: ControlPlaneDeps, cookies: Record<string, string>): ConsoleSession | null {
  const raw = cookies[SESSION_COOKIE];
  if (!raw) return null;
  const principal = principalFromSession(deps, raw);
  if (!principal || !principal.csrfToken) return null;
  const orgs = membershipsOf(deps.db, principal.accountId).map((m) => ({ orgId: m.orgId, name: m.name, role: m.role }));
  let orgName = principal.orgId;
  try {
    orgName = getOrganization(deps.db, principal.orgId).name;
  } catch {}
  return { raw, principal, csrfToken: principal.csrfToken, orgName, orgs };
}

/**
 * Starts a session for an account in exactly `orgId`, recording how it was authenticated; null
 * when the account is not a member there (never another organization instead). Password
 * sign-in without an organization goes through the auth folder's `signIn`, which picks the
 * default organization (`defaultOrganization`), then `sessionCookie`.
 */
export function openSession(deps: ControlPlaneDeps, accountId: string, orgId: string, authMethod: AuthMethod): { cookie: string; orgId: string } | null {
  if (!orgId || !membership(deps.db, accountId, orgId)) return null;
  const { raw } = createSession(deps, accountId, orgId, authMethod);
  return { cookie: sessionCookie(deps, raw), orgId };
}

export function sessionCookie(deps: ControlPlaneDeps, raw: string): string {
  return serializeCookie(SESSION_COOKIE, raw, { secure: deps.config.secureCookies, maxAgeSeconds: deps.config.sessionTtlSeconds });
}

export function signOut(deps: ControlPlaneDeps, raw: string | undefined): string {
  if (raw) deleteSession(deps.db, raw);
  return clearCookie(SESSION_COOKIE, { secure: deps.config.secureCookies });
}
