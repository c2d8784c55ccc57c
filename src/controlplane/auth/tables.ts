// The tables of auth: accounts, memberships (who belongs to which organization) and who granted
// them, the identity-provider subjects an account signed in as, console sessions, API tokens,
// `svc login` requests. Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { organizations } from "../organizations/tables.ts";

/** A person who can sign in to the service (console, CLI login, claim links). */
export const accounts = table("accounts", (c) => ({
  id: c.text("id").primaryKey(),
  email: c.text("email").notNull().unique(),
  displayName: c.text("display_name"),
  passwordHash: c.text("password_hash"),
  createdAt: c.createdAt(),
}));

/** Console sessions; the cookie holds the raw id, the table its SHA-256. */
export const sessions = table("sessions", (c) => ({
  idHash: c.text("id_hash").primaryKey(),
  accountId: c
    .text("account_id")
    .notNull()
    .references(() => accounts.id),
  orgId: c
    .text("org_id")
    .notNull()
    .references(() => organizations.id),
  csrfToken: c.text("csrf_token").notNull(),
  /**
   * How the session was authenticated: "password" (the account's own credential, may switch
   * among the account's organizations) or "sso" (the IdP of `org_id`; bound to that org).
   */
  authMethod: c
    .text("auth_method", { enum: ["password", "sso"] })
    .notNull()
    .default("password"),
  /**
   * When the person last proved who they are for this session (password typed, or the
   * provider's sign-in); a session that switched organization keeps its predecessor's. Null
   * for sessions from before it was kept: never a fresh sign-in (escrow approval, issue 27).
   */
  authenticatedAt: c.millis("authenticated_at"),
  /** The provider identity (issuer, `sub`) a single sign-on session was opened as; null for a password. */
  idp: c.json<{ issuer: string; subject: string }>("idp"),
  expiresAt: c.millis("expires_at").notNull(),
  createdAt: c.createdAt(),
}));

/** API tokens for the CLI, bound to one account in one organization; stored hashed. */
export const apiTokens = table("api_tokens", (c) => ({
  id: c.text("id").primaryKey(),
  accountId: c
    .text("account_id")
    .notNull()
    .references(() => accounts.id),
  orgId: c
    .text("org_id")
    .notNull()
    .references(() => organizations.id),
  name: c.text("name").notNull(),
  tokenHash: c.text("token_hash").notNull().unique(),
  lastUsedAt: c.millis("last_used_at"),
  /** The client that last used it, as its user agent said (`svc-cli/0.2.0+<commit>`; issue 29: version skew), recorded with last_used_at. */
  lastClient: c.text("last_client"),
  expiresAt: c.millis("expires_at"),
  revokedAt: c.millis("revoked_at"),
  /**
   * The sign-in the token was issued from (the approving console session's for `svc login`,
   * the issuing credential's for the API): a token never refreshes it. Null: never fresh.
   */
  authenticatedAt: c.millis("authenticated_at"),
  /** The provider identity of that sign-in when it was single sign-on (as `sessions.idp`). */
  idp: c.json<{ issuer: string; subject: string }>("idp"),
  createdAt: c.createdAt(),
}));

/** `svc login` browser approval: the CLI polls with its secret until an admin approves. */
export const loginRequests = table("login_requests", (c) => ({
  id: c.text("id").primaryKey(),
  userCode: c.text("user_code").notNull(),
  pollSecretHash: c.text("poll_secret_hash").notNull(),
  approvedByAccountId: c.text("approved_by_account_id"),
  orgId: c.text("org_id"),
  tokenId: c.text("token_id"),
  /** The approving session's sign-in time, handed on to the token (api_tokens.authenticated_at). */
  approverAuthenticatedAt: c.millis("approver_authenticated_at"),
  approverIdp: c.json<{ issuer: string; subject: string }>("approver_idp"),
  expiresAt: c.millis("expires_at").notNull(),
  completedAt: c.millis("completed_at"),
  /** The last token poll accepted: polls sooner than the advertised interval are refused, on every replica. */
  lastPolledAt: c.millis("last_polled_at"),
  createdAt: c.createdAt(),
}));

/** Who belongs to which organization, with which role. Auth reads it on every admin request. */
export const memberships = table(
  "memberships",
  (c) => ({
    accountId: c
      .text("account_id")
      .notNull()
      .references(() => accounts.id),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    role: c.text("role", { enum: ["owner", "admin", "member"] }).notNull(),
    /** When the account joined (set by the control plane's clock; kept across role changes). */
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.primaryKey({ columns: [t.accountId, t.orgId] })],
);

/**
 * Who gave an account its membership or a higher role, and when (membership-grants.ts): one row
 * per grant, written in the transaction of the change, never updated or deleted, kept after
 * the membership ends. The escrow approval rule reads it (an approver granted by the
 * requester, directly or through accounts the requester granted, is refused). `by_account_id`
 * is null for grants no person made (`bootstrap`) and for memberships that existed before
 * grants were kept (`unknown`, written by the migration).
 */
export const membershipGrants = table(
  "membership_grants",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    accountId: c
      .text("account_id")
      .notNull()
      .references(() => accounts.id),
    kind: c.text("kind", { enum: ["bootstrap", "created", "invited", "added", "raised", "lowered", "unknown"] }).notNull(),
    role: c.text("role", { enum: ["owner", "admin", "member"] }).notNull(),
    previousRole: c.text("previous_role", { enum: ["owner", "admin", "member"] }),
    byAccountId: c.text("by_account_id").references(() => accounts.id),
    at: c.millis("at").notNull(),
  }),
  (t, c) => [c.index("membership_grants_account").on(t.accountId, t.at)],
);

/**
 * The identity-provider subjects (issuer, `sub`) an account signed in as through single
 * sign-on: the person behind an account as the provider knows them, whatever email it shows.
 */
export const idpSubjects = table(
  "idp_subjects",
  (c) => ({
    accountId: c
      .text("account_id")
      .notNull()
      .references(() => accounts.id),
    issuer: c.text("issuer").notNull(),
    subject: c.text("subject").notNull(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    firstSeenAt: c.millis("first_seen_at").notNull(),
    lastSeenAt: c.millis("last_seen_at").notNull(),
  }),
  (t, c) => [c.primaryKey({ columns: [t.accountId, t.issuer, t.subject] }), c.index("idp_subjects_subject").on(t.issuer, t.subject)],
);
