// The tables of auth: accounts, memberships (who belongs to which organization), console sessions, API tokens, `svc login` requests. Declared once for both stores (db/table.ts, db/README.md).
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
  accountId: c.text("account_id").notNull().references(() => accounts.id),
  orgId: c.text("org_id").notNull().references(() => organizations.id),
  csrfToken: c.text("csrf_token").notNull(),
  /**
   * How the session was authenticated: "password" (the account's own credential, may switch
   * among the account's organizations) or "sso" (the IdP of `org_id`; bound to that org).
   */
  authMethod: c.text("auth_method", { enum: ["password", "sso"] }).notNull().default("password"),
  expiresAt: c.millis("expires_at").notNull(),
  createdAt: c.createdAt(),
}));

/** API tokens for the CLI, bound to one account in one organization; stored hashed. */
export const apiTokens = table("api_tokens", (c) => ({
  id: c.text("id").primaryKey(),
  accountId: c.text("account_id").notNull().references(() => accounts.id),
  orgId: c.text("org_id").notNull().references(() => organizations.id),
  name: c.text("name").notNull(),
  tokenHash: c.text("token_hash").notNull().unique(),
  lastUsedAt: c.millis("last_used_at"),
  /** The client that last used it, as its user agent said (`svc-cli/0.2.0+<commit>`; issue 29: version skew), recorded with last_used_at. */
  lastClient: c.text("last_client"),
  expiresAt: c.millis("expires_at"),
  revokedAt: c.millis("revoked_at"),
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
    accountId: c.text("account_id").notNull().references(() => accounts.id),
    orgId: c.text("org_id").notNull().references(() => organizations.id),
    role: c.text("role", { enum: ["owner", "admin", "member"] }).notNull(),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.primaryKey({ columns: [t.accountId, t.orgId] })],
);
