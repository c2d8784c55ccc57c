// Who is acting on the admin plane, as types only: every service and the admin trail name them
// without importing the sign-in code (service.ts).
import type { IdpSubject } from "./idp-subjects.ts";

export type Role = "owner" | "admin" | "member";
/**
 * How a console session was authenticated. "password": the account's own credential, good for
 * any organization the account belongs to. "sso": the identity provider of the session's
 * organization, which an admin of that organization controls; it vouches for nothing else,
 * and never for an owner: an owner signs in with their password (`ssoMayOpen`).
 */
export type AuthMethod = "password" | "sso";
export type Principal = {
  accountId: string;
  email: string;
  orgId: string;
  role: Role;
  via: "token" | "session";
  csrfToken?: string;
  authMethod?: AuthMethod;
  tokenExpiresAt?: number | null;
  /**
   * The credential that proved it, as the admin trail names it (issue 27): an API token's id
   * (`tok_…`) or the first 16 hex digits of a session's stored hash; never the secret itself.
   */
  credentialId?: string;
  /** The client's address and user agent (auth/plugin.ts resolvePrincipal), for the admin trail. */
  ip?: string | null;
  userAgent?: string | null;
  /**
   * When the person last proved who they are: the session's sign-in, or the sign-in the API
   * token was issued from. Null when unknown (older sessions and tokens). Escrow approval
   * needs it within 5 minutes (issue 27).
   */
  authenticatedAt?: number | null;
  /** The provider identity (issuer, `sub`) that sign-in was made as, when it was single sign-on. */
  idp?: IdpSubject | null;
};

/** A sign-in as credentials carry it on: when, and as which provider identity if through single sign-on. */
export type SignIn = { at: number | null; idp?: IdpSubject | null };
