// Console sessions: the session cookie (`__Host-svc_session`, or `svc_session` on plain-http
// loopback) resolved through the auth folder's session functions, and signing an account in
// to one of its organizations.
import { sessionCookieName } from "../auth/plugin.ts";
import { type IdpSubject, recordIdpSubject } from "../auth/idp-subjects.ts";
import { type AuthMethod, membership, membershipsOf, principalFromSession, ssoMayOpen } from "../auth/service.ts";
import { createSession, deleteSession, signOutSession } from "../auth/sessions.ts";
import type { RequestOrigin } from "../http/request-gate.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { getOrganization } from "../organizations/service.ts";
import type { ConsoleSession } from "./context.ts";
import { clearCookie, serializeCookie } from "./cookies.ts";

export async function loadSession(deps: ControlPlaneDeps, cookies: Record<string, string>): Promise<ConsoleSession | null> {
  const raw = cookies[sessionCookieName(deps.config)];
  if (!raw) return null;
  const principal = await principalFromSession(deps, raw);
  if (!principal || !principal.csrfToken) return null;
  const orgs = (await membershipsOf(deps.db, principal.accountId)).map((m) => ({ orgId: m.orgId, name: m.name, role: m.role }));
  let orgName = principal.orgId;
  try {
    orgName = (await getOrganization(deps.db, principal.orgId)).name;
  } catch {}
  return { raw, principal, csrfToken: principal.csrfToken, orgName, orgs };
}

/**
 * Starts a session for an account in exactly `orgId`, recording how it was authenticated; null
 * when the account is not a member there (never another organization instead), or for "sso"
 * when it is an owner there (owners sign in with their password). The membership
 * check and the new session are one transaction, so a member removed meanwhile gets no
 * session; `replaces` (the session being left) is deleted in it too, and the provider's
 * subject (`idp`) is remembered with the account. `authenticatedAt`: when the person signed in
 * (a switch of organization keeps the left session's: no one typed anything). Password sign-in without
 * an organization goes through the auth folder's `signIn`, which picks the default
 * organization (`defaultOrganization`), then `sessionCookie`.
 */
export async function openSession(
  deps: ControlPlaneDeps,
  accountId: string,
  orgId: string,
  authMethod: AuthMethod,
  origin: RequestOrigin,
  options: { replaces?: string | undefined; authenticatedAt: number | null; idp?: IdpSubject | null; switchedFrom?: string },
): Promise<{ cookie: string; orgId: string } | null> {
  if (!orgId) return null;
  const raw = await deps.db.transaction(async (tx) => {
    const m = await membership(tx, accountId, orgId);
    if (!m || (authMethod === "sso" && !ssoMayOpen(m.role))) return null;
    const signIn = { at: options.authenticatedAt, idp: options.idp ?? null };
    const created = await createSession(
      { db: tx, now: () => deps.now(), config: deps.config },
      accountId,
      orgId,
      authMethod,
      signIn,
      origin,
      options.switchedFrom ? { switchedFrom: options.switchedFrom } : {},
    );
    if (options.idp) await recordIdpSubject(tx, { ...options.idp, accountId, orgId, at: deps.now() });
    if (options.replaces) await deleteSession(tx, options.replaces);
    return created.raw;
  });
  return raw === null ? null : { cookie: sessionCookie(deps, raw), orgId };
}

export function sessionCookie(deps: ControlPlaneDeps, raw: string): string {
  return serializeCookie(sessionCookieName(deps.config), raw, { secure: deps.config.secureCookies, maxAgeSeconds: deps.config.sessionTtlSeconds });
}

export async function signOut(deps: ControlPlaneDeps, raw: string | undefined, origin: RequestOrigin): Promise<string> {
  if (raw) await signOutSession(deps, raw, origin);
  return clearCookie(sessionCookieName(deps.config), { secure: deps.config.secureCookies });
}
