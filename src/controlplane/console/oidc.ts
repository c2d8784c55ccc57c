// OpenID Connect single sign-on for the console, configured per organization. The flow is the
// authorization-code flow with PKCE (S256), state and nonce. What the browser carries between
// the start and the callback (state, nonce, verifier, organization, return path) is sealed by
// the KMS into a short-lived HttpOnly cookie, so no server-side table is needed and a replica
// other than the one that started the flow can finish it. The ID token's signature is checked
// against the provider's JWKS (jose), with issuer, audience, expiry and nonce; the account is
// matched by the token's verified email and must already be a member of the organization.
// The provider's subject (`sub`) is remembered with the account (auth/idp-subjects.ts): escrow's
// two-person rule refuses an approver the provider knows as the requester.
// The session it opens is an "sso" session bound to that organization: the provider is run by
// that organization's admins, so it vouches for the account there and nowhere else, and never
// for an owner (owners sign in with their password; only owners change the provider).
// A flow started from a claim-link page carries the claim token instead (sealed in the same
// cookie): it opens no session, and the verified email redeems the link (claims/service.ts
// `redeemClaimByVerifiedEmail`), so a chat user whose service user came from the directory,
// without a console account, can link their chat account.
// The issuer, and every endpoint the control plane itself calls (discovery, token, JWKS,
// userinfo), must pass the outbound URL policy (http/outbound.ts): public addresses only
// unless the operator allows private ones; checked when saved and before each call.
import { createHash, randomBytes } from "node:crypto";
import { eq } from "drizzle-orm";
import { type JWTPayload, createRemoteJWKSet, jwtVerify } from "jose";
import { SvcError } from "../../contract/errors.ts";
import type { IdpSubject } from "../auth/idp-subjects.ts";
import { findAccountByEmail, membership, ssoMayOpen } from "../auth/service.ts";
import { type Acting, recordChange, secretDigest } from "../audit/admin-events.ts";
import { tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { checkOutboundUrl } from "../http/outbound.ts";

export const CALLBACK_PATH = "/sso/callback";
/** The flow cookie's base name (`__Host-svc_oidc` on https, so its path is `/`). */
export const FLOW_COOKIE = "svc_oidc";
export const FLOW_TTL_SECONDS = 600;
const FLOW_CONTEXT = "console-oidc-flow";
const DISCOVERY_TTL_MS = 10 * 60 * 1000;
const FETCH_TIMEOUT_MS = 10_000;

/** A refusal to show the person signing in; the message says what to do. */
export class SsoError extends Error {
  override name = "SsoError";
}

export type OidcSettings = { issuer: string; clientId: string; hasSecret: boolean };

export function secretContext(orgId: string): string {
  return `oidc:${orgId}`;
}

export async function getOidcSettings(deps: ControlPlaneDeps, orgId: string): Promise<OidcSettings | null> {
  const o = tables(deps.db).oidcConfigs;
  const [row] = await deps.db.select().from(o).where(eq(o.orgId, orgId));
  return row ? { issuer: row.issuer, clientId: row.clientId, hasSecret: !!row.wrappedClientSecret } : null;
}

/** Checks an issuer URL: https, or http only on loopback (local providers and tests). */
export function validateIssuer(input: string): string {
  let u: URL;
  try {
    u = new URL(input.trim());
  } catch {
    throw new SsoError(`"${input}" is not a URL; the issuer looks like https://login.example.com/realms/acme`);
  }
  const loopback = ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname);
  if (u.protocol !== "https:" && !(u.protocol === "http:" && loopback)) throw new SsoError("the issuer must use https");
  if (u.username || u.password || u.search || u.hash) throw new SsoError("the issuer must not contain credentials, a query or a fragment");
  // Kept as typed: the discovery document must name exactly this issuer (some end in "/").
  return input.trim();
}

/** The outbound URL policy, as an SsoError the console shows. */
async function checkEndpoint(allowPrivate: boolean, what: string, url: string, stage: "save" | "fetch"): Promise<void> {
  try {
    await checkOutboundUrl(url, { what, allowPrivate, stage });
  } catch (e) {
    if (e instanceof SvcError) throw new SsoError(e.message);
    throw e;
  }
}

/**
 * Stores the organization's provider; a blank secret keeps the stored one. One statement either
 * way (an upsert with the new secret, else an update of the stored row), so a secret saved
 * meanwhile is not overwritten with the one read before.
 */
export async function saveOidcSettings(deps: ControlPlaneDeps, orgId: string, input: { issuer: string; clientId: string; clientSecret: string }, by: Acting): Promise<void> {
  const issuer = validateIssuer(input.issuer);
  await checkEndpoint(deps.config.allowPrivateOutbound, "the issuer", issuer, "save");
  const clientId = input.clientId.trim();
  if (!clientId) throw new SsoError("enter the client id the provider gave this application");
  const secret = input.clientSecret;
  const wrapped = secret ? deps.kms.wrap(new TextEncoder().encode(secret), secretContext(orgId)) : null;
  await deps.db.transaction(async (tx) => {
    const o = tables(tx).oidcConfigs;
    const [before] = await tx.select({ issuer: o.issuer, clientId: o.clientId }).from(o).where(eq(o.orgId, orgId));
    if (wrapped) {
      await tx
        .insert(o)
        .values({ orgId, issuer, clientId, wrappedClientSecret: wrapped })
        .onConflictDoUpdate({ target: o.orgId, set: { issuer, clientId, wrappedClientSecret: wrapped } });
    } else {
      const updated = await tx.update(o).set({ issuer, clientId }).where(eq(o.orgId, orgId)).returning({ orgId: o.orgId });
      if (updated.length === 0) throw new SsoError("enter the client secret the provider gave this application");
    }
    await recordChange(tx, by, {
      orgId,
      action: "sso.configure",
      target: { type: "sso", id: orgId, name: issuer },
      ...(before ? { before: { issuer: before.issuer, client_id: before.clientId } } : {}),
      // The client secret only as a digest, and only when a new one was given.
      after: { issuer, client_id: clientId, ...(secret ? { client_secret: secretDigest(secret) } : {}) },
    });
  });
  discoveryCache.delete(issuer);
}

export async function deleteOidcSettings(deps: ControlPlaneDeps, orgId: string, by: Acting): Promise<void> {
  await deps.db.transaction(async (tx) => {
    const o = tables(tx).oidcConfigs;
    const [gone] = await tx.delete(o).where(eq(o.orgId, orgId)).returning({ issuer: o.issuer, clientId: o.clientId });
    if (gone) await recordChange(tx, by, { orgId, action: "sso.remove", target: { type: "sso", id: orgId, name: gone.issuer }, before: { issuer: gone.issuer, client_id: gone.clientId } });
  });
}

// ── discovery ──────────────────────────────────────────────────────────────────────────

type Discovery = {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  jwks_uri: string;
  userinfo_endpoint?: string;
  token_endpoint_auth_methods_supported?: string[];
  code_challenge_methods_supported?: string[];
};

const discoveryCache = new Map<string, { at: number; doc: Discovery }>();
const jwksCache = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

async function fetchJson(url: string, init: RequestInit = {}): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, { ...init, redirect: "error", signal: AbortSignal.timeout(FETCH_TIMEOUT_MS) });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {}
  return { status: res.status, body };
}

export async function discover(issuer: string, now = Date.now(), opts: { allowPrivate?: boolean } = {}): Promise<Discovery> {
  const cached = discoveryCache.get(issuer);
  if (cached && now - cached.at < DISCOVERY_TTL_MS) return cached.doc;
  const url = `${issuer.replace(/\/+$/, "")}/.well-known/openid-configuration`;
  await checkEndpoint(opts.allowPrivate ?? false, "the issuer", url, "fetch");
  let got: { status: number; body: unknown };
  try {
    got = await fetchJson(url);
  } catch (e) {
    throw new SsoError(`the identity provider at ${issuer} could not be reached (${(e as Error).message}); try again or ask an admin to check the issuer`);
  }
  const doc = got.body as Partial<Discovery> | null;
  if (got.status !== 200 || !doc || typeof doc !== "object") throw new SsoError(`the identity provider's discovery document at ${url} answered ${got.status}`);
  if (doc.issuer !== issuer) throw new SsoError(`the discovery document names issuer ${String(doc.issuer)}, not the configured ${issuer}`);
  for (const k of ["authorization_endpoint", "token_endpoint", "jwks_uri"] as const) {
    if (typeof doc[k] !== "string") throw new SsoError(`the discovery document has no ${k}`);
  }
  discoveryCache.set(issuer, { at: now, doc: doc as Discovery });
  return doc as Discovery;
}

// ── the flow ───────────────────────────────────────────────────────────────────────────

type Flow = { state: string; nonce: string; verifier: string; orgId: string; next: string; at: number; claim?: string };

const b64url = (bytes: Buffer) => bytes.toString("base64url");

export function redirectUri(deps: ControlPlaneDeps): string {
  return deps.config.publicUrl + CALLBACK_PATH;
}

/**
 * Builds the provider's authorization URL and the sealed flow cookie value. With `claim` (a
 * claim-link token) the flow redeems that link at the callback instead of signing in.
 */
export async function startSso(deps: ControlPlaneDeps, orgId: string, next: string, opts: { claim?: string } = {}): Promise<{ location: string; flow: string }> {
  const settings = await getOidcSettings(deps, orgId);
  if (!settings) throw new SsoError("single sign-on is not configured for that organization; sign in with your password");
  const doc = await discover(settings.issuer, deps.now(), { allowPrivate: deps.config.allowPrivateOutbound });
  const flow: Flow = {
    state: b64url(randomBytes(24)),
    nonce: b64url(randomBytes(24)),
    verifier: b64url(randomBytes(48)),
    orgId,
    next,
    at: deps.now(),
    ...(opts.claim ? { claim: opts.claim } : {}),
  };
  const challenge = b64url(createHash("sha256").update(flow.verifier).digest());
  const url = new URL(doc.authorization_endpoint);
  const params = {
    response_type: "code",
    client_id: settings.clientId,
    redirect_uri: redirectUri(deps),
    scope: "openid email profile",
    state: flow.state,
    nonce: flow.nonce,
    code_challenge: challenge,
    code_challenge_method: "S256",
  };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return { location: url.toString(), flow: deps.kms.wrap(new TextEncoder().encode(JSON.stringify(flow)), FLOW_CONTEXT) };
}

function openFlow(deps: ControlPlaneDeps, sealed: string | undefined): Flow {
  if (!sealed) throw new SsoError("the sign-in attempt was not started here or took too long; start single sign-on again");
  let flow: Flow;
  try {
    flow = JSON.parse(new TextDecoder().decode(deps.kms.unwrap(sealed, FLOW_CONTEXT))) as Flow;
  } catch {
    throw new SsoError("the sign-in attempt could not be read; start single sign-on again");
  }
  if (deps.now() - flow.at > FLOW_TTL_SECONDS * 1000) throw new SsoError("the sign-in attempt took too long; start single sign-on again");
  return flow;
}

export type SsoResult = { accountId: string; orgId: string; email: string; next: string; idp: IdpSubject | null; authenticatedAt: number };
/**
 * Who the provider vouched for: a verified email, for the flow's organization; `claim` when the
 * flow redeems a claim link. `idp` is the provider's name for the person (issuer and `sub`),
 * `authenticatedAt` when they signed in there (the ID token's `auth_time` when it has one).
 */
export type SsoIdentity = { orgId: string; email: string; next: string; claim: string | null; idp: IdpSubject | null; authenticatedAt: number };

/** Finishes a sign-in flow: the provider's answer verified (verifySso), then the member it names. */
export async function finishSso(deps: ControlPlaneDeps, sealedFlow: string | undefined, query: URLSearchParams): Promise<SsoResult> {
  return ssoMember(deps, await verifySso(deps, sealedFlow, query));
}

/** The member an SSO identity names in its organization: refused when not a member, or an owner. */
export async function ssoMember(deps: ControlPlaneDeps, identity: SsoIdentity): Promise<SsoResult> {
  const { email, orgId } = identity;
  const account = await findAccountByEmail(deps.db, email);
  const member = account ? await membership(deps.db, account.id, orgId) : undefined;
  if (!account || !member) {
    throw new SsoError(`${email} is not a member of this organization; ask an owner or admin to add you`);
  }
  if (!ssoMayOpen(member.role)) {
    throw new SsoError(`${email} is an owner of this organization: owners sign in with their password, not single sign-on`);
  }
  return { accountId: account.id, orgId, email, next: identity.next, idp: identity.idp, authenticatedAt: identity.authenticatedAt };
}

/** Verifies the provider's answer: state, the code exchange, the ID token; the verified email. */
export async function verifySso(deps: ControlPlaneDeps, sealedFlow: string | undefined, query: URLSearchParams): Promise<SsoIdentity> {
  const flow = openFlow(deps, sealedFlow);
  const state = query.get("state");
  if (!state || state !== flow.state) throw new SsoError("the sign-in answer does not belong to this attempt (state mismatch); start single sign-on again");
  const providerError = query.get("error");
  if (providerError) {
    const desc = query.get("error_description");
    throw new SsoError(`the identity provider refused the sign-in: ${providerError}${desc ? ` (${desc})` : ""}`);
  }
  const code = query.get("code");
  if (!code) throw new SsoError("the identity provider sent no authorization code; start single sign-on again");

  const o = tables(deps.db).oidcConfigs;
  const [row] = await deps.db.select().from(o).where(eq(o.orgId, flow.orgId));
  if (!row) throw new SsoError("single sign-on is no longer configured for this organization");
  const doc = await discover(row.issuer, deps.now(), { allowPrivate: deps.config.allowPrivateOutbound });
  // RFC 9207: when the provider names itself in the answer, it must be the configured issuer.
  const iss = query.get("iss");
  if (iss !== null && iss !== row.issuer) throw new SsoError("the sign-in answer came from another identity provider; start single sign-on again");
  const secret = new TextDecoder().decode(deps.kms.unwrap(row.wrappedClientSecret, secretContext(flow.orgId)));

  const body = new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: redirectUri(deps), code_verifier: flow.verifier });
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded", accept: "application/json" };
  const methods = doc.token_endpoint_auth_methods_supported ?? ["client_secret_basic"];
  if (methods.includes("client_secret_basic")) {
    const enc = (s: string) => encodeURIComponent(s).replace(/%20/g, "+");
    headers.authorization = `Basic ${Buffer.from(`${enc(row.clientId)}:${enc(secret)}`).toString("base64")}`;
  } else {
    body.set("client_id", row.clientId);
    body.set("client_secret", secret);
  }
  const allowPrivate = deps.config.allowPrivateOutbound;
  await checkEndpoint(allowPrivate, "the provider's token endpoint", doc.token_endpoint, "fetch");
  let token: { status: number; body: unknown };
  try {
    token = await fetchJson(doc.token_endpoint, { method: "POST", headers, body });
  } catch (e) {
    throw new SsoError(`the identity provider's token endpoint could not be reached (${(e as Error).message})`);
  }
  const tokenBody = (token.body ?? {}) as { id_token?: unknown; access_token?: unknown; error?: unknown; error_description?: unknown };
  if (token.status !== 200 || typeof tokenBody.id_token !== "string") {
    const why = typeof tokenBody.error === "string" ? `${tokenBody.error}${typeof tokenBody.error_description === "string" ? `: ${tokenBody.error_description}` : ""}` : `status ${token.status}`;
    throw new SsoError(`the identity provider did not issue an ID token (${why})`);
  }

  await checkEndpoint(allowPrivate, "the provider's jwks_uri", doc.jwks_uri, "fetch");
  let jwks = jwksCache.get(doc.jwks_uri);
  if (!jwks) {
    jwks = createRemoteJWKSet(new URL(doc.jwks_uri), { timeoutDuration: FETCH_TIMEOUT_MS });
    jwksCache.set(doc.jwks_uri, jwks);
  }
  let claims: JWTPayload;
  try {
    ({ payload: claims } = await jwtVerify(tokenBody.id_token, jwks, {
      issuer: row.issuer,
      audience: row.clientId,
      currentDate: new Date(deps.now()),
      clockTolerance: 60,
    }));
  } catch (e) {
    throw new SsoError(`the ID token from the identity provider did not verify (${(e as Error).message})`);
  }
  if (claims.nonce !== flow.nonce) throw new SsoError("the ID token does not belong to this sign-in attempt (nonce mismatch)");
  if (Array.isArray(claims.aud) && claims.aud.length > 1 && claims.azp !== row.clientId) throw new SsoError("the ID token was issued to another client");
  // Some providers put the email claims only in the userinfo response for the code flow.
  let identity: Record<string, unknown> = claims;
  if (typeof claims.email !== "string" && doc.userinfo_endpoint && typeof tokenBody.access_token === "string") {
    await checkEndpoint(allowPrivate, "the provider's userinfo endpoint", doc.userinfo_endpoint, "fetch");
    identity = await userinfo(doc.userinfo_endpoint, tokenBody.access_token, claims.sub);
  }
  const email = typeof identity.email === "string" ? identity.email.trim().toLowerCase() : "";
  if (!email) throw new SsoError("the identity provider did not share an email address; allow the email scope for this application");
  if (identity.email_verified !== true) throw new SsoError(`the identity provider has not verified ${email}; verify it there and try again`);
  const idp = typeof claims.sub === "string" && claims.sub ? { issuer: row.issuer, subject: claims.sub } : null;
  // A provider that says when the person signed in there (auth_time) is believed; a provider
  // that answered from its own older session is not a fresh sign-in here either.
  const authTime = typeof claims.auth_time === "number" ? Math.min(deps.now(), claims.auth_time * 1000) : deps.now();
  return { orgId: flow.orgId, email, next: flow.next, claim: flow.claim ?? null, idp, authenticatedAt: authTime };
}

/** The userinfo claims for the ID token's subject (OIDC Core §5.3.2: `sub` must match). */
async function userinfo(endpoint: string, accessToken: string, sub: string | undefined): Promise<{ email?: unknown; email_verified?: unknown }> {
  let got: { status: number; body: unknown };
  try {
    got = await fetchJson(endpoint, { headers: { authorization: `Bearer ${accessToken}`, accept: "application/json" } });
  } catch (e) {
    throw new SsoError(`the identity provider's userinfo endpoint could not be reached (${(e as Error).message})`);
  }
  const body = (got.body ?? {}) as { sub?: unknown; email?: unknown; email_verified?: unknown };
  if (got.status !== 200 || body.sub !== sub) throw new SsoError("the identity provider's userinfo answer does not match the ID token");
  return body;
}
