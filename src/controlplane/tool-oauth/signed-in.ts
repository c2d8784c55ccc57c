// Who signed in at a tool server's authorization server, as its answer tells (pure): the
// subject to show and audit, and the email the callback compares with the consent link's user
// (a forwarded link, docs/mcp.md "Per-user OAuth"). The tokens come straight from the token
// endpoint over TLS, so their claims are read without checking a signature (OpenID Connect
// Core 3.1.3.7); nothing here is ever logged.
import type { AuthorizationServerMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";

/**
 * The scope asked for: the server's, plus `openid email` when the authorization server offers
 * both, so its ID token says who signed in (the callback refuses a grant signed in as someone
 * else than the link's user: a forwarded link, docs/mcp.md "Per-user OAuth").
 */
export function requestedScope(metadata: Pick<AuthorizationServerMetadata, "scopes_supported">, serverScope: string | null): string | null {
  const offered = metadata.scopes_supported ?? [];
  const scopes = new Set((serverScope ?? "").split(" ").filter(Boolean));
  if (offered.includes("openid") && offered.includes("email")) for (const s of ["openid", "email"]) scopes.add(s);
  return scopes.size > 0 ? [...scopes].join(" ") : null;
}

/**
 * Who the tokens speak for, to show and audit (never the token): the ID token's `sub` when the
 * server gave one (straight from the token endpoint over TLS, OpenID Connect Core 3.1.3.7), else
 * the access token's when it is a JWT; null when it is opaque.
 */
export function subjectOf(tokens: OAuthTokens): string | null {
  return claimOf(tokens, "sub");
}

/**
 * The email of whoever signed in at the authorization server, when it tells: the ID token's
 * `email` claim (asked for with `openid email`), else a JWT access token's; null when neither
 * carries one (an opaque token, a server that offers no OpenID scopes).
 */
export function emailOf(tokens: OAuthTokens): string | null {
  return claimOf(tokens, "email");
}

function claimOf(tokens: OAuthTokens, claim: "sub" | "email"): string | null {
  for (const jwt of [(tokens as { id_token?: string }).id_token, tokens.access_token]) {
    const part = jwt?.split(".")[1];
    if (!part || jwt!.split(".").length !== 3) continue;
    try {
      const value = (JSON.parse(Buffer.from(part, "base64url").toString("utf8")) as Record<string, unknown>)[claim];
      if (typeof value === "string" && value.length > 0 && value.length <= 256) return value;
    } catch {}
  }
  return null;
}

/**
 * The email signed in when it is not the consent's user's (compared case-insensitively), else
 * null: the same person, or the authorization server did not say.
 */
export function signedInAsAnother(tokens: OAuthTokens, userEmail: string): string | null {
  const signedIn = emailOf(tokens);
  return signedIn !== null && signedIn.trim().toLowerCase() !== userEmail.trim().toLowerCase() ? signedIn : null;
}
