// Per-user OAuth to MCP servers (issue 32), held by the control plane: the consent links, the
// browser's return (code exchanged with the PKCE verifier), the tokens (KMS-wrapped, bound to
// their grant), refreshing them (one refresher at a time, so a rotating refresh token never
// races between replicas), and a short-lived access token handed to a runtime for the (user,
// server) it asks for. Nothing here ever writes a token to a log, an audit record or an answer
// of the admin API; see docs/mcp.md "Per-user OAuth" for why the tokens live here.
import { randomBytes } from "node:crypto";
import { and, desc, eq, gt, isNull, lt, or } from "drizzle-orm";
import type { OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Acting, actingAsSystem, recordChange } from "../audit/admin-events.ts";
import { hashSecret } from "../auth/tokens.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { findUserById } from "../directory/service.ts";
import { type ToolServerRow, toolServerById, toolServerNames } from "../tool-servers/read.ts";
import { type Client, type Discovered, authorizationUrl, discover, exchange, outboundFetch, refresh, register, revokeAt } from "./flow.ts";
import { signedInAsAnother, subjectOf } from "./signed-in.ts";

export const CONSENT_PATH = "/oauth/tool-servers/consent/";
export const CALLBACK_PATH = "/oauth/tool-servers/callback";
/** How long a consent link (and the authorization it starts) may take. */
export const CONSENT_TTL_MS = 15 * 60_000;
/** A live, unopened link is handed out again while it stays valid at least this long. */
export const CONSENT_REUSE_MIN_MS = 2 * 60_000;
/** An access token expiring sooner than this (or than half its lifetime) is refreshed before it is handed out. */
export const REFRESH_BEFORE_MS = 60_000;
/** The longest a runtime keeps a handed-out access token (it asks again after). */
export const HANDOUT_MAX_MS = 5 * 60_000;
/** How long one replica holds the right to refresh a grant. */
const REFRESH_LEASE_MS = 30_000;

type ServerRow = ToolServerRow;
type GrantRow = Tables["toolServerGrants"]["$inferSelect"];
type OauthRow = Tables["toolServerOauth"]["$inferSelect"];

const ctx = {
  clientSecret: (serverId: string) => `tool-server-oauth-client:${serverId}`,
  link: (consentId: string) => `tool-server-consent-link:${consentId}`,
  // Bound to the browser that pressed Continue too (a digest of its pre-session cookie): see openConsent.
  verifier: (consentId: string, browser: string) => `tool-server-consent-verifier:${consentId}:${hashSecret(browser)}`,
  access: (grantId: string) => `tool-server-grant-access:${grantId}`,
  refresh: (grantId: string) => `tool-server-grant-refresh:${grantId}`,
};

const wrap = (deps: ControlPlaneDeps, text: string, context: string) => deps.kms.wrap(new TextEncoder().encode(text), context);
const unwrap = (deps: ControlPlaneDeps, wrapped: string, context: string) => new TextDecoder().decode(deps.kms.unwrap(wrapped, context));
const secret = () => randomBytes(32).toString("base64url");

/** The settings row of a server created with `auth: oauth`: an admin's client, or none yet (dynamic registration at the first consent). */
export async function createOauthSettings(
  tx: Db,
  deps: Pick<ControlPlaneDeps, "kms">,
  s: { id: string; orgId: string },
  client: { clientId: string | null; clientSecret: string | null },
): Promise<void> {
  await tx.insert(tables(tx).toolServerOauth).values({
    serverId: s.id,
    orgId: s.orgId,
    registration: client.clientId ? "admin" : null,
    clientId: client.clientId,
    clientSecretWrapped: client.clientId && client.clientSecret ? deps.kms.wrap(new TextEncoder().encode(client.clientSecret), ctx.clientSecret(s.id)) : null,
  });
}

/** Forgets a server's OAuth state (the server is being deleted): its grants, consents and settings. */
export async function forgetOauth(tx: Db, serverId: string): Promise<void> {
  const t = tables(tx);
  await tx.delete(t.toolServerGrants).where(eq(t.toolServerGrants.serverId, serverId));
  await tx.delete(t.toolServerConsents).where(eq(t.toolServerConsents.serverId, serverId));
  await tx.delete(t.toolServerOauth).where(eq(t.toolServerOauth.serverId, serverId));
}

async function oauthRow(db: Db, serverId: string): Promise<OauthRow> {
  const o = tables(db).toolServerOauth;
  const [row] = await db.select().from(o).where(eq(o.serverId, serverId));
  if (!row) throw new SvcError("conflict", `tool server ${serverId} does not use OAuth (create it with auth "oauth")`);
  return row;
}

/**
 * What talking to the server's authorization server needs: discovery (done once, kept) and the
 * client (the admin's, or registered dynamically once, kept with its secret wrapped).
 */
async function prepared(deps: ControlPlaneDeps, server: ServerRow): Promise<{ d: Discovered; client: Client; redirectUri: string }> {
  const redirectUri = `${deps.config.publicUrl}${CALLBACK_PATH}`;
  const f = outboundFetch(deps.config, `tool server "${server.name}" OAuth`);
  let row: OauthRow | undefined = await oauthRow(deps.db, server.id);
  let d: Discovered;
  if (row.issuer && row.metadata && row.resource) {
    d = { issuer: row.issuer, metadata: row.metadata as Discovered["metadata"], resource: row.resource, scope: row.scope };
  } else {
    d = await discover(server.url!, f);
    const o = tables(deps.db).toolServerOauth;
    [row] = await deps.db
      .update(o)
      .set({ issuer: d.issuer, metadata: d.metadata as Record<string, unknown>, resource: d.resource, scope: d.scope })
      .where(eq(o.serverId, server.id))
      .returning();
  }
  if (!row!.clientId || (row!.registration === "dynamic" && row!.redirectUri !== redirectUri)) {
    const c = await register(d, redirectUri, f);
    const o = tables(deps.db).toolServerOauth;
    [row] = await deps.db
      .update(o)
      .set({ registration: "dynamic", clientId: c.clientId, clientSecretWrapped: c.clientSecret ? wrap(deps, c.clientSecret, ctx.clientSecret(server.id)) : null, redirectUri })
      .where(eq(o.serverId, server.id))
      .returning();
  }
  const client = { clientId: row!.clientId!, clientSecret: row!.clientSecretWrapped ? unwrap(deps, row!.clientSecretWrapped, ctx.clientSecret(server.id)) : null };
  return { d, client, redirectUri };
}

/**
 * The consent link for (server, user): a live unopened one again, else a new one. `userId`
 * null: the server's listing grant, which the runtimes use for tools/list only.
 */
export async function consentLink(deps: ControlPlaneDeps, server: ServerRow, userId: string | null): Promise<{ url: string; expiresAt: number }> {
  const now = deps.now();
  const c = tables(deps.db).toolServerConsents;
  const who = userId === null ? isNull(c.userId) : eq(c.userId, userId);
  const [live] = await deps.db
    .select()
    .from(c)
    .where(and(eq(c.serverId, server.id), who, isNull(c.openedAt), gt(c.expiresAt, now + CONSENT_REUSE_MIN_MS)))
    .orderBy(desc(c.createdAt), desc(c.id))
    .limit(1);
  if (live) return { url: `${deps.config.publicUrl}${CONSENT_PATH}${unwrap(deps, live.linkWrapped, ctx.link(live.id))}`, expiresAt: live.expiresAt };
  const id = newId("toolServerConsent", now);
  const token = secret();
  const expiresAt = now + CONSENT_TTL_MS;
  await deps.db.transaction(async (tx) => {
    const ct = tables(tx).toolServerConsents;
    // Expired or finished consents of this server go as new ones come: the table stays bounded.
    await tx.delete(ct).where(and(eq(ct.serverId, server.id), or(lt(ct.expiresAt, now), lt(ct.usedAt, now - CONSENT_TTL_MS))));
    await tx.insert(ct).values({ id, orgId: server.orgId, serverId: server.id, userId, linkHash: hashSecret(token), linkWrapped: wrap(deps, token, ctx.link(id)), expiresAt });
  });
  return { url: `${deps.config.publicUrl}${CONSENT_PATH}${token}`, expiresAt };
}

function consentGone(why: string): never {
  throw new SvcError("not_found", `${why}; call the tool again in the chat for a new link`);
}

type ConsentRow = Tables["toolServerConsents"]["$inferSelect"];

async function liveConsent(deps: ControlPlaneDeps, token: string): Promise<ConsentRow> {
  const c = tables(deps.db).toolServerConsents;
  const [row] = await deps.db
    .select()
    .from(c)
    .where(eq(c.linkHash, hashSecret(token)));
  if (!row || row.expiresAt < deps.now()) consentGone("this consent link is unknown or expired");
  if (row.openedAt !== null) consentGone("this consent link was used already");
  return row;
}

/** The service user a consent is for, as the directory has them; null: the listing grant. */
async function consentUser(db: Db, row: ConsentRow): Promise<{ email: string; displayName: string | null } | null> {
  if (row.userId === null) return null;
  const user = await findUserById(db, row.orgId, row.userId);
  if (!user) consentGone("the user this consent link was made for no longer exists");
  return { email: user.email, displayName: user.displayName };
}

export type ConsentInfo = { server: string; user: { email: string; displayName: string | null } | null; expiresAt: number };

/**
 * What a consent link is for (the tool server, the chat user), to show before the browser goes
 * on. Looking does not take the link: a link previewer or prefetcher does not use it up.
 */
export async function inspectConsent(deps: ControlPlaneDeps, token: string): Promise<ConsentInfo> {
  const row = await liveConsent(deps, token);
  const server = await serverRow(deps.db, row.serverId);
  return { server: server.name, user: await consentUser(deps.db, row), expiresAt: row.expiresAt };
}

/**
 * The person at the browser confirmed the consent page: the link is taken (once), a PKCE
 * verifier and a state are made and kept with it, and the browser goes on to the
 * authorization server. The verifier is wrapped bound to that browser (`browser`: its
 * pre-session cookie, which no other site can set or read), so only the browser that pressed
 * Continue can finish: the authorization URL, copied and sent to someone else, leads nowhere
 * (nor does one with the `openid email` scopes taken out to hide who signed in).
 */
export async function openConsent(deps: ControlPlaneDeps, token: string, browser: string): Promise<string> {
  const now = deps.now();
  const c = tables(deps.db).toolServerConsents;
  const row = await liveConsent(deps, token);
  const server = await serverRow(deps.db, row.serverId);
  const { d, client, redirectUri } = await prepared(deps, server);
  const state = secret();
  const { url, verifier } = await authorizationUrl(d, client, redirectUri, state);
  // Conditional: of two browsers opening one link at once, only one goes on.
  const taken = await deps.db
    .update(c)
    .set({ openedAt: now, stateHash: hashSecret(state), verifierWrapped: wrap(deps, verifier, ctx.verifier(row.id, browser)) })
    .where(and(eq(c.id, row.id), isNull(c.openedAt)))
    .returning({ id: c.id });
  if (taken.length === 0) consentGone("this consent link was used already");
  return url;
}

async function serverRow(db: Db, serverId: string): Promise<ServerRow> {
  const row = await toolServerById(db, serverId);
  if (!row) throw new SvcError("not_found", "the tool server of this consent was deleted");
  return row;
}

/**
 * The authorization server sent the browser back: the state (one-time, bound to the consent
 * and its PKCE verifier) is taken, the code exchanged, and the grant for (server, user)
 * replaced by the new tokens. A code from another authorization request cannot be exchanged
 * with this verifier (PKCE), so another user's state or code leads nowhere; the verifier opens
 * only for the browser that pressed Continue (`browser`, as in openConsent).
 */
export async function finishConsent(deps: ControlPlaneDeps, q: { state?: string; code?: string; error?: string }, browser: string): Promise<{ server: string; subject: string | null }> {
  if (!q.state) throw new SvcError("validation_failed", "the authorization server's answer has no state");
  const now = deps.now();
  const c = tables(deps.db).toolServerConsents;
  const [row] = await deps.db
    .select()
    .from(c)
    .where(eq(c.stateHash, hashSecret(q.state)));
  if (!row || row.expiresAt < now || !row.verifierWrapped) consentGone("this authorization is unknown or expired");
  const taken = await deps.db
    .update(c)
    .set({ usedAt: now })
    .where(and(eq(c.id, row.id), isNull(c.usedAt)))
    .returning({ id: c.id });
  if (taken.length === 0) consentGone("this authorization was finished already");
  if (q.error || !q.code) throw new SvcError("forbidden", `the authorization server did not grant access (${(q.error ?? "no code").slice(0, 100)})`);
  const server = await serverRow(deps.db, row.serverId);
  let verifier: string;
  try {
    verifier = unwrap(deps, row.verifierWrapped, ctx.verifier(row.id, browser));
  } catch {
    deps.log.warn("tool server consent refused: finished in another browser than the one that pressed Continue", { server: server.name, user_id: row.userId });
    throw new SvcError(
      "forbidden",
      "this sign-in was started in another browser: only the browser that pressed Continue on svc's consent page can finish it, and nothing was connected. If someone sent you this link, do not use it",
    );
  }
  const { d, client, redirectUri } = await prepared(deps, server);
  const f = outboundFetch(deps.config, `tool server "${server.name}" OAuth`);
  const tokens = await exchange(d, client, redirectUri, q.code, verifier, f);
  const subject = subjectOf(tokens);
  await refuseAnotherPerson(deps, server, row, tokens, subject);
  await storeGrant(deps, server, row.userId, tokens, subject);
  deps.log.info("tool server consent granted", { server: server.name, user_id: row.userId, subject });
  return { server: server.name, subject };
}

/**
 * A consent link forwarded to someone else (docs/mcp.md "Per-user OAuth"): when the
 * authorization server says who signed in (an email in the ID token or a JWT access token) and
 * that is not the email of the user the link was made for, the grant is refused: nothing is
 * stored, and the admin trail names it (never a token). The tokens are dropped, not revoked at
 * the authorization server: it may have issued them under that person's own grant to svc, and
 * revoking would end their own connection too. When it says nothing, the consent page's
 * warning is the only guard.
 */
async function refuseAnotherPerson(deps: ControlPlaneDeps, server: ServerRow, row: ConsentRow, tokens: OAuthTokens, subject: string | null): Promise<void> {
  const user = await consentUser(deps.db, row);
  const signedIn = user === null ? null : signedInAsAnother(tokens, user.email);
  if (user === null || signedIn === null) return;
  deps.log.warn("tool server consent refused: signed in as another person than the link's user", { server: server.name, user_id: row.userId, signed_in: signedIn, subject });
  await deps.db.transaction(async (tx) =>
    recordChange(tx, actingAsSystem(deps, "controlplane"), {
      orgId: server.orgId,
      workspaceId: server.workspaceId,
      action: "tool_server.consent_refuse",
      target: { type: "tool_server", id: server.id, name: server.name },
      after: { user_id: row.userId, user_email: user.email, signed_in_email: signedIn, subject },
      result: "refused",
      code: "forbidden",
      reason: `consent for ${user.email} refused at tool server "${server.name}": the authorization server signed in ${signedIn}`,
    }),
  );
  throw new SvcError(
    "forbidden",
    `you signed in at the authorization server as ${signedIn}, but this link connects the tool for ${user.email}; nothing was connected. If someone sent you this link, do not use it. If you are ${user.email}, sign in there with that account and call the tool again for a new link`,
  );
}

async function storeGrant(deps: ControlPlaneDeps, server: ServerRow, userId: string | null, tokens: OAuthTokens, subject: string | null): Promise<void> {
  const now = deps.now();
  const id = newId("toolServerGrant", now);
  await deps.db.transaction(async (tx) => {
    const g = tables(tx).toolServerGrants;
    await tx.delete(g).where(and(eq(g.serverId, server.id), userId === null ? isNull(g.userId) : eq(g.userId, userId)));
    await tx.insert(g).values({
      id,
      orgId: server.orgId,
      serverId: server.id,
      userId,
      subject,
      accessWrapped: wrap(deps, tokens.access_token, ctx.access(id)),
      refreshWrapped: tokens.refresh_token ? wrap(deps, tokens.refresh_token, ctx.refresh(id)) : null,
      expiresAt: tokens.expires_in ? now + tokens.expires_in * 1000 : null,
      scope: tokens.scope ?? null,
      refreshedAt: now,
    });
  });
}

async function grantOf(db: Db, serverId: string, userId: string | null): Promise<GrantRow | undefined> {
  const g = tables(db).toolServerGrants;
  const [row] = await db
    .select()
    .from(g)
    .where(and(eq(g.serverId, serverId), userId === null ? isNull(g.userId) : eq(g.userId, userId)))
    .orderBy(desc(g.createdAt))
    .limit(1);
  return row;
}

export type HandedToken = { accessToken: string; expiresAt: number; subject: string | null; grantId: string };

/**
 * An access token for (server, user) to hand to a runtime, refreshed first when it expires within
 * REFRESH_BEFORE_MS (or `stale`: the server refused it). None (no grant, or the refresh was
 * refused: consent revoked at the authorization server) → null, and the grant is dropped.
 */
export async function accessToken(deps: ControlPlaneDeps, server: ServerRow, userId: string | null, stale = false): Promise<HandedToken | null> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const grant = await grantOf(deps.db, server.id, userId);
    if (!grant) return null;
    const now = deps.now();
    const fresh = !stale && (grant.expiresAt === null || grant.expiresAt - now > refreshMargin(grant));
    if (fresh) return handed(deps, grant, now);
    if (!grant.refreshWrapped) {
      if (!stale && grant.expiresAt !== null && grant.expiresAt > now) return handed(deps, grant, now);
      await dropGrant(deps.db, grant.id);
      return null;
    }
    // One refresher: take the lease, or wait for the holder's new tokens.
    const g = tables(deps.db).toolServerGrants;
    const leased = await deps.db
      .update(g)
      .set({ refreshingUntil: now + REFRESH_LEASE_MS })
      .where(and(eq(g.id, grant.id), or(isNull(g.refreshingUntil), lt(g.refreshingUntil, now))))
      .returning({ id: g.id });
    if (leased.length === 0) {
      await Bun.sleep(250);
      stale = false;
      continue;
    }
    const f = outboundFetch(deps.config, `tool server "${server.name}" OAuth`);
    const { d, client } = await prepared(deps, server);
    let tokens: OAuthTokens;
    try {
      tokens = await refresh(d, client, unwrap(deps, grant.refreshWrapped, ctx.refresh(grant.id)), f);
    } catch (e) {
      const code = (e as { errorCode?: string }).errorCode ?? (e as Error).name;
      if (code === "invalid_grant" || (e as Error).name === "InvalidGrantError") {
        deps.log.info("tool server grant refused at refresh: consent withdrawn", { server: server.name, user_id: userId, subject: grant.subject });
        await dropGrant(deps.db, grant.id);
        return null;
      }
      await deps.db.update(g).set({ refreshingUntil: null }).where(eq(g.id, grant.id));
      throw new SvcError("conflict", `the tool server's authorization server did not refresh the token: ${((e as Error).message ?? "").slice(0, 200)}`);
    }
    const subject = subjectOf(tokens) ?? grant.subject;
    const [updated] = await deps.db
      .update(g)
      .set({
        subject,
        accessWrapped: wrap(deps, tokens.access_token, ctx.access(grant.id)),
        // A rotating server sends a new refresh token; one that keeps it sends none.
        ...(tokens.refresh_token ? { refreshWrapped: wrap(deps, tokens.refresh_token, ctx.refresh(grant.id)) } : {}),
        expiresAt: tokens.expires_in ? now + tokens.expires_in * 1000 : null,
        refreshingUntil: null,
        refreshedAt: now,
      })
      .where(eq(g.id, grant.id))
      .returning();
    deps.log.info("tool server token refreshed", { server: server.name, user_id: userId, subject });
    return handed(deps, updated!, now);
  }
  throw new SvcError("store_busy", "the tool server's token is being refreshed by another replica; try again");
}

/** How long before expiry a token is refreshed: REFRESH_BEFORE_MS, or half its lifetime when that is shorter. */
function refreshMargin(g: GrantRow): number {
  const lifetime = g.expiresAt! - (g.refreshedAt ?? g.createdAt);
  return Math.max(0, Math.min(REFRESH_BEFORE_MS, lifetime / 2));
}

function handed(deps: ControlPlaneDeps, g: GrantRow, now: number): HandedToken {
  const expiresAt = Math.min(g.expiresAt ?? Number.POSITIVE_INFINITY, now + HANDOUT_MAX_MS);
  return { accessToken: unwrap(deps, g.accessWrapped, ctx.access(g.id)), expiresAt, subject: g.subject, grantId: g.id };
}

async function dropGrant(db: Db, id: string): Promise<void> {
  const g = tables(db).toolServerGrants;
  await db.delete(g).where(eq(g.id, id));
}

export type GrantView = {
  id: string;
  server_id: string;
  server: string;
  user_id: string | null;
  subject: string | null;
  expires_at: string | null;
  refreshable: boolean;
  granted_at: string;
  refreshed_at: string | null;
};

/** The grants of the organization (optionally one server's, one user's): who, where, until when; never a token. */
export async function listGrants(db: Db, orgId: string, f: { serverId?: string; userId?: string } = {}): Promise<GrantView[]> {
  const { toolServerGrants: g } = tables(db);
  const conds = [eq(g.orgId, orgId)];
  if (f.serverId) conds.push(eq(g.serverId, f.serverId));
  if (f.userId) conds.push(eq(g.userId, f.userId));
  const grants = await db
    .select()
    .from(g)
    .where(and(...conds))
    .orderBy(g.createdAt);
  const names = await toolServerNames(
    db,
    grants.map((r) => r.serverId),
  );
  // By server name, then the order granted (a grant of a deleted server is gone with it).
  const rows = grants.flatMap((r) => (names.has(r.serverId) ? [{ g: r, name: names.get(r.serverId)! }] : [])).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return rows.map(({ g: r, name }) => ({
    id: r.id,
    server_id: r.serverId,
    server: name,
    user_id: r.userId,
    subject: r.subject,
    expires_at: r.expiresAt === null ? null : new Date(r.expiresAt).toISOString(),
    refreshable: r.refreshWrapped !== null,
    granted_at: new Date(r.createdAt).toISOString(),
    refreshed_at: r.refreshedAt === null ? null : new Date(r.refreshedAt).toISOString(),
  }));
}

/**
 * Revokes a grant: deleted here (the next call of that user is refused with consent_required)
 * and, best effort, revoked at the authorization server (RFC 7009) so the tokens die there too.
 */
export async function revokeGrant(deps: ControlPlaneDeps, orgId: string, server: ServerRow, grantId: string, by: Acting): Promise<void> {
  const g = tables(deps.db).toolServerGrants;
  const [grant] = await deps.db
    .select()
    .from(g)
    .where(and(eq(g.id, grantId), eq(g.orgId, orgId), eq(g.serverId, server.id)));
  if (!grant) throw new SvcError("not_found", `grant ${grantId} of tool server "${server.name}" not found; list them with \`svc tool-servers tokens list ${server.name}\``);
  await deps.db.transaction(async (tx) => {
    const gt2 = tables(tx).toolServerGrants;
    await tx.delete(gt2).where(eq(gt2.id, grant.id));
    await recordChange(tx, by, {
      orgId,
      workspaceId: server.workspaceId,
      action: "tool_server.token_revoke",
      target: { type: "tool_server", id: server.id, name: server.name },
      before: { grant_id: grant.id, user_id: grant.userId, subject: grant.subject },
    });
  });
  try {
    const { d, client } = await prepared(deps, server);
    const token = grant.refreshWrapped ? unwrap(deps, grant.refreshWrapped, ctx.refresh(grant.id)) : unwrap(deps, grant.accessWrapped, ctx.access(grant.id));
    await revokeAt(d, client, token, outboundFetch(deps.config, `tool server "${server.name}" OAuth`));
  } catch (e) {
    deps.log.warn("tool server grant revoked here, not at the authorization server", { server: server.name, grant_id: grant.id, error: ((e as Error).message ?? "").slice(0, 200) });
  }
}
