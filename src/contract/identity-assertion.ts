// Signed identity assertions for in-house MCP servers (issue 32 item 2, docs/mcp.md "Identity
// at the tool"): a tool server that names an assertion header gets, on every HTTP request the
// runtime sends it, a short-lived JWT (ES256, signed by the organization's assertion key) saying
// who the call is for. Shared by the control plane (definitions, JWKS, key delivery) and the
// proxy (signing), so both read the same shapes. Pure.
import { type Static, Type } from "@sinclair/typebox";
import { HEADER_NAME_RE, type RuleCheck, isReservedHeader } from "./tool-server.ts";

/** ES256: every JWT library and JWKS client verifies it (PyJWT, jose, FastMCP, Go, Java), FIPS 140 included. */
export const ASSERTION_ALG = "ES256";
/** An assertion's lifetime: `exp - iat`. The issue caps it at 60 s; replay caches need keep a jti no longer. */
export const ASSERTION_LIFETIME_SECONDS = 60;
/**
 * How long a retired key stays in the JWKS after a rotation: runtimes switch at their next bundle
 * poll (about a minute, longer while the control plane is unreachable) and what they signed before
 * lives 60 s more. Ten minutes covers both with room; `withdraw_previous` drops it at once.
 */
export const RETIRED_KEY_PUBLISHED_SECONDS = 600;
/** The JWKS answer's Cache-Control max-age: a verifier sees a rotation's new key at once (unknown kid → refetch), a withdrawal within this. */
export const JWKS_MAX_AGE_SECONDS = 300;

/** The public JWKS of an organization's assertion keys (unauthenticated GET). */
export function jwksPath(orgId: string): string {
  return `/api/v1/assertion-keys/${orgId}/jwks.json`;
}

/** What one assertion says. `tool` and `audit_record_id` are absent from the runtime's own requests (initialize, tools/list). */
export type AssertionClaims = {
  iss: string;
  aud: string;
  sub: string;
  email?: string;
  groups?: string[];
  tool?: string;
  audit_record_id?: string;
  jti: string;
  iat: number;
  exp: number;
};

/** Who a tool call is for, as the gateway hands it to the upstream (the claims the call adds). */
export type AssertionSubject = { sub: string; email: string; groups: string[]; tool: string; audit_record_id: string };

/**
 * The claims of one assertion (pure: the clock and the jti come in). A request that is not a
 * user's tool call (the runtime connecting and listing tools) is asserted as the installation
 * itself: `sub` is its `inst_…` id and there is no email, groups, tool or record.
 */
export function assertionClaims(o: { issuer: string; audience: string; installationId: string; subject: AssertionSubject | null; jti: string; nowSeconds: number }): AssertionClaims {
  const base = { iss: o.issuer, aud: o.audience, jti: o.jti, iat: o.nowSeconds, exp: o.nowSeconds + ASSERTION_LIFETIME_SECONDS };
  if (!o.subject) return { ...base, sub: o.installationId };
  const s = o.subject;
  return { ...base, sub: s.sub, email: s.email, groups: [...s.groups], tool: s.tool, audit_record_id: s.audit_record_id };
}

/** The header's value: `Authorization` takes the bearer scheme (what FastMCP's and most servers' bearer auth read), any other header the bare JWT. */
export function assertionHeaderValue(header: string, jwt: string): string {
  return header.toLowerCase() === "authorization" ? `Bearer ${jwt}` : jwt;
}

/**
 * The assertion header a server names: an HTTP header name the transport does not set itself,
 * and not one of the server's secret headers (the assertion would replace the secret or the
 * other way round, depending on the order they are set).
 */
export function checkAssertionHeader(header: string, secretNames: readonly string[]): RuleCheck {
  if (!HEADER_NAME_RE.test(header)) return { ok: false, path: "/assertion_header", message: `"${header.slice(0, 100)}" is not an HTTP header name (letters, digits and !#$%&'*+.^_\`|~-)` };
  if (isReservedHeader(header)) return { ok: false, path: "/assertion_header", message: `header "${header}" is set by the MCP transport itself and cannot carry the assertion` };
  if (secretNames.some((n) => n.toLowerCase() === header.toLowerCase())) {
    return { ok: false, path: "/assertion_header", message: `header "${header}" is one of the server's secret headers; name another header for the assertion or drop that secret` };
  }
  return { ok: true };
}

/** A configured audience: what the server checks `aud` against (default: its URL). */
export function checkAssertionAudience(audience: string): RuleCheck {
  if (audience.length >= 1 && audience.length <= 512 && !/[\u0000-\u001f\u007f]/.test(audience)) return { ok: true };
  return { ok: false, path: "/assertion_audience", message: "assertion_audience must be 1 to 512 characters with no control characters: the value the server checks aud against" };
}

/** An EC P-256 public key as the JWKS publishes it. */
export const AssertionPublicJwk = Type.Object({
  kty: Type.Literal("EC"),
  crv: Type.Literal("P-256"),
  x: Type.String(),
  y: Type.String(),
  kid: Type.String(),
  alg: Type.Literal(ASSERTION_ALG),
  use: Type.Literal("sig"),
});
export type AssertionPublicJwk = Static<typeof AssertionPublicJwk>;
export const AssertionJwks = Type.Object({ keys: Type.Array(AssertionPublicJwk) });
export type AssertionJwks = Static<typeof AssertionJwks>;

/**
 * GET runtime/assertion-key: the organization's current signing key for this replica, its
 * private half (a JWK) sealed with age to the replica's credential-sync recipient, so it is
 * never in clear on the wire, in the bundle or in the runtime's state directory.
 */
export const AssertionKeyMaterial = Type.Object({
  id: Type.String(),
  alg: Type.Literal(ASSERTION_ALG),
  issuer: Type.String(),
  sealed_private_jwk: Type.String(),
});
export type AssertionKeyMaterial = Static<typeof AssertionKeyMaterial>;

// The identity a call presented upstream, as its audit record names it: contract/audit.ts UpstreamIdentity.
