// Per-user OAuth to MCP servers (issue 32): the client svc is at each server's authorization
// server, the consents in flight, and the grants (tokens) users gave. Tokens and client secrets
// are held only wrapped by the KMS (bound to their row), never in plain text; see docs/mcp.md
// "Per-user OAuth".
import { table } from "../db/table.ts";
import { organizations } from "../organizations/tables.ts";
import { toolServers } from "../tool-servers/tables.ts";
import { users } from "../directory/tables.ts";

/** One row per server created with `auth: oauth`: what discovery found and the client svc is there. */
export const toolServerOauth = table("tool_server_oauth", (c) => ({
  serverId: c
    .text("server_id")
    .primaryKey()
    .references(() => toolServers.id),
  orgId: c
    .text("org_id")
    .notNull()
    .references(() => organizations.id),
  /** The authorization server's issuer and its RFC 8414 metadata, once discovered. */
  issuer: c.text("issuer"),
  metadata: c.json<Record<string, unknown>>("metadata"),
  /** The resource (RFC 8707) tokens are asked for: the server's canonical URL or its metadata's `resource`. */
  resource: c.text("resource"),
  scope: c.text("scope"),
  /** `admin`: an admin registered the client; `dynamic`: svc registered itself (RFC 7591). */
  registration: c.text("registration", { enum: ["admin", "dynamic"] }),
  clientId: c.text("client_id"),
  clientSecretWrapped: c.text("client_secret_wrapped"),
  /** The redirect URI the client was registered with (the control plane's callback). */
  redirectUri: c.text("redirect_uri"),
}));

/**
 * A consent in flight: created when a user's call found no grant (or an admin asked for the
 * listing grant), opened once (then redirected to the authorization server with PKCE), taken
 * once at the callback. Tokens: the link's and the state's, stored as SHA-256 hashes.
 */
export const toolServerConsents = table(
  "tool_server_consents",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    serverId: c
      .text("server_id")
      .notNull()
      .references(() => toolServers.id),
    /** The service user the grant is for; null: the server's listing grant (tools/list only). */
    userId: c.text("user_id").references(() => users.id),
    linkHash: c.text("link_hash").notNull(),
    /** The link's token, KMS-wrapped (bound to the row): a live, unopened link is handed out again rather than a new one. */
    linkWrapped: c.text("link_wrapped").notNull(),
    /** Set when the link is opened: the OAuth `state` (hashed) and the PKCE verifier (KMS-wrapped). */
    stateHash: c.text("state_hash"),
    verifierWrapped: c.text("verifier_wrapped"),
    openedAt: c.millis("opened_at"),
    usedAt: c.millis("used_at"),
    expiresAt: c.millis("expires_at").notNull(),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.uniqueIndex("tool_server_consents_link").on(t.linkHash), c.uniqueIndex("tool_server_consents_state").on(t.stateHash), c.index("tool_server_consents_server").on(t.serverId)],
);

/** A user's tokens for one server (or the server's listing grant when userId is null). */
export const toolServerGrants = table(
  "tool_server_grants",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    serverId: c
      .text("server_id")
      .notNull()
      .references(() => toolServers.id),
    userId: c.text("user_id").references(() => users.id),
    /** Who the tokens speak for at the server (the token's or ID token's `sub`): shown and audited, never a token. */
    subject: c.text("subject"),
    accessWrapped: c.text("access_wrapped").notNull(),
    refreshWrapped: c.text("refresh_wrapped"),
    /** When the access token expires (epoch ms); null: the server did not say. */
    expiresAt: c.millis("expires_at"),
    scope: c.text("scope"),
    /** One refresher at a time across control-plane replicas (rotating refresh tokens must not race). */
    refreshingUntil: c.millis("refreshing_until"),
    refreshedAt: c.millis("refreshed_at"),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.index("tool_server_grants_server_user").on(t.serverId, t.userId)],
);
