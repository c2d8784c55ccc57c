// The OAuth 2.1 client side of the MCP authorization spec (2025-06-18), as the control plane
// runs it for a tool server: the I/O edge, built on the official MCP SDK's client/auth helpers
// (discovery, PKCE, resource indicators, registration, code exchange, refresh) rather than by
// hand. Every URL a server's metadata names is checked by the outbound rule before it is
// called (a server must not point the control plane at a private address), and every fetch
// trusts the operator's extra CA (SVC_CP_EXTRA_CA_FILE) besides the system's.
import {
  discoverAuthorizationServerMetadata,
  discoverOAuthProtectedResourceMetadata,
  exchangeAuthorization,
  extractResourceMetadataUrl,
  refreshAuthorization,
  registerClient,
  startAuthorization,
} from "@modelcontextprotocol/sdk/client/auth.js";
import { checkResourceAllowed, resourceUrlFromServerUrl } from "@modelcontextprotocol/sdk/shared/auth-utils.js";
import type { AuthorizationServerMetadata, OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import { rootCertificates } from "node:tls";
import { SvcError } from "../../contract/errors.ts";
import type { ControlPlaneConfig } from "../deps.ts";
import { checkOutboundUrl } from "../http/outbound.ts";

/** Each call to a server or authorization server: bounded, whatever it does. */
export const OAUTH_FETCH_TIMEOUT_MS = 10_000;

export type Discovered = { issuer: string; metadata: AuthorizationServerMetadata; resource: string; scope: string | null };
export type Client = { clientId: string; clientSecret: string | null };

type FetchFn = (url: string | URL, init?: RequestInit) => Promise<Response>;

/** A fetch that checks the outbound rule on every URL and trusts the extra CA. */
export function outboundFetch(config: Pick<ControlPlaneConfig, "allowPrivateOutbound" | "extraCaPem">, what: string): FetchFn {
  return async (url, init) => {
    await checkOutboundUrl(url, { what, allowPrivate: config.allowPrivateOutbound, stage: "fetch" });
    const tls = config.extraCaPem ? { tls: { ca: [config.extraCaPem, ...rootCertificates] } } : {};
    return fetch(url, { ...init, ...tls, redirect: "manual", signal: AbortSignal.timeout(OAUTH_FETCH_TIMEOUT_MS) } as RequestInit);
  };
}

function failed(step: string, e: unknown): never {
  if (e instanceof SvcError) throw e;
  throw new SvcError("conflict", `the tool server's OAuth ${step} failed: ${((e as Error).message ?? String(e)).split("\n")[0]!.slice(0, 300)}`);
}

/**
 * RFC 9728 then RFC 8414: the server's 401 names its protected-resource metadata
 * (`WWW-Authenticate: Bearer resource_metadata=…`), or the well-known URL holds it; it names
 * the authorization server, whose metadata is read next. The resource (RFC 8707) is the
 * metadata's `resource`, which must be the server's own URL (or a prefix of it).
 */
export async function discover(serverUrl: string, f: FetchFn): Promise<Discovered> {
  let resourceMetadataUrl: URL | undefined;
  try {
    const probe = await f(serverUrl, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "svc", version: "1" } } }),
    });
    if (probe.status === 401) resourceMetadataUrl = extractResourceMetadataUrl(probe);
    await probe.body?.cancel();
  } catch (e) {
    failed("discovery (the server did not answer)", e);
  }
  let prm;
  try {
    prm = await discoverOAuthProtectedResourceMetadata(serverUrl, resourceMetadataUrl ? { resourceMetadataUrl } : {}, f);
  } catch (e) {
    failed("discovery (protected-resource metadata, RFC 9728)", e);
  }
  const issuer = prm.authorization_servers?.[0];
  if (!issuer) throw new SvcError("conflict", "the tool server's protected-resource metadata names no authorization server");
  const canonical = resourceUrlFromServerUrl(serverUrl).href;
  const resource = prm.resource ? new URL(prm.resource).href : canonical;
  // The SDK's rule: the same origin, and the server's path the resource's or below it by whole segments (/mc does not cover /mcp).
  if (!checkResourceAllowed({ requestedResource: canonical, configuredResource: resource }))
    throw new SvcError("conflict", `the tool server's metadata names the resource ${resource}, which is not the server's URL ${canonical}`);
  let metadata: AuthorizationServerMetadata | undefined;
  try {
    metadata = await discoverAuthorizationServerMetadata(issuer, { fetchFn: f });
  } catch (e) {
    failed("discovery (authorization-server metadata, RFC 8414)", e);
  }
  if (!metadata) throw new SvcError("conflict", `the authorization server ${issuer} publishes no metadata (RFC 8414 or OpenID discovery)`);
  if (!metadata.code_challenge_methods_supported?.includes("S256")) throw new SvcError("conflict", `the authorization server ${issuer} does not offer PKCE with S256, which OAuth 2.1 requires`);
  return { issuer, metadata, resource: prm.resource ?? canonical, scope: prm.scopes_supported?.join(" ") || null };
}

/** RFC 7591 dynamic registration, when the authorization server offers it. */
export async function register(d: Discovered, redirectUri: string, f: FetchFn): Promise<Client> {
  if (!d.metadata.registration_endpoint)
    throw new SvcError("conflict", `the authorization server ${d.issuer} offers no dynamic client registration: register a client there and give it with --oauth-client-id (its secret on stdin)`);
  try {
    const c = await registerClient(d.issuer, {
      metadata: d.metadata,
      clientMetadata: {
        client_name: "svc",
        redirect_uris: [redirectUri],
        grant_types: ["authorization_code", "refresh_token"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
      fetchFn: f,
    });
    return { clientId: c.client_id, clientSecret: c.client_secret ?? null };
  } catch (e) {
    failed("client registration (RFC 7591)", e);
  }
}

const info = (c: Client): OAuthClientInformationMixed => ({ client_id: c.clientId, ...(c.clientSecret ? { client_secret: c.clientSecret } : {}) });

/** The authorization URL (PKCE S256, the resource, the state) and the verifier to keep. */
export async function authorizationUrl(d: Discovered, c: Client, redirectUri: string, state: string): Promise<{ url: string; verifier: string }> {
  const { authorizationUrl: url, codeVerifier } = await startAuthorization(d.issuer, {
    metadata: d.metadata,
    clientInformation: info(c),
    redirectUrl: redirectUri,
    state,
    resource: new URL(d.resource),
    ...(d.scope ? { scope: d.scope } : {}),
  });
  return { url: url.href, verifier: codeVerifier };
}

export async function exchange(d: Discovered, c: Client, redirectUri: string, code: string, verifier: string, f: FetchFn): Promise<OAuthTokens> {
  try {
    return await exchangeAuthorization(d.issuer, {
      metadata: d.metadata,
      clientInformation: info(c),
      authorizationCode: code,
      codeVerifier: verifier,
      redirectUri,
      resource: new URL(d.resource),
      fetchFn: f,
    });
  } catch (e) {
    failed("code exchange", e);
  }
}

export async function refresh(d: Discovered, c: Client, refreshToken: string, f: FetchFn): Promise<OAuthTokens> {
  return refreshAuthorization(d.issuer, { metadata: d.metadata, clientInformation: info(c), refreshToken, resource: new URL(d.resource), fetchFn: f });
}

/** RFC 7009 revocation at the authorization server, when it offers it; best effort. */
export async function revokeAt(d: Discovered, c: Client, token: string, f: FetchFn): Promise<void> {
  const endpoint = (d.metadata as { revocation_endpoint?: string }).revocation_endpoint;
  if (!endpoint) return;
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  const body = new URLSearchParams({ token, token_type_hint: "refresh_token" });
  if (c.clientSecret) headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(c.clientId)}:${encodeURIComponent(c.clientSecret)}`).toString("base64")}`;
  else body.set("client_id", c.clientId);
  const res = await f(endpoint, { method: "POST", headers, body });
  await res.body?.cancel();
}

/**
 * Who the tokens speak for, to show and audit (never the token): the ID token's `sub` when the
 * server gave one (straight from the token endpoint over TLS, OpenID Connect Core 3.1.3.7), else
 * the access token's when it is a JWT; null when it is opaque.
 */
export function subjectOf(tokens: OAuthTokens): string | null {
  for (const jwt of [(tokens as { id_token?: string }).id_token, tokens.access_token]) {
    const part = jwt?.split(".")[1];
    if (!part || jwt!.split(".").length !== 3) continue;
    try {
      const sub = (JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as { sub?: unknown }).sub;
      if (typeof sub === "string" && sub.length > 0 && sub.length <= 256) return sub;
    } catch {}
  }
  return null;
}
