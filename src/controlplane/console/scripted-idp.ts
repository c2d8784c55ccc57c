// Test support: an in-process OpenID provider whose answers a test scripts — discovery, JWKS,
// and a token endpoint that returns the ID token the test set last. Used by the OIDC and
// session-binding tests; the browser suites use a real oidc-provider instead.
import { type JWK, SignJWT, exportJWK, generateKeyPair } from "jose";

export type SigningKeys = Awaited<ReturnType<typeof generateKeyPair>>;

export type ScriptedIdp = {
  issuer: string;
  /** The ID token the next token request answers with. */
  nextIdToken: string | null;
  /** What the last token request carried (PKCE verifier, client authentication). */
  lastTokenRequest: { verifier: string | null; auth: string | null } | null;
  /**
   * An ID token signed by the provider's key (or `o.key`), for audience "console" unless told,
   * for subject "sub-1" unless told, issued now (or at `o.at`, epoch ms: a test's own clock).
   */
  idToken(claims: Record<string, unknown>, o?: { key?: SigningKeys; aud?: string; iss?: string; sub?: string; at?: number }): Promise<string>;
  stop(): void;
};

export async function startScriptedIdp(): Promise<ScriptedIdp> {
  const signing = await generateKeyPair("RS256");
  const jwk: JWK = { ...(await exportJWK(signing.publicKey)), kid: "k1", alg: "RS256", use: "sig" };
  const idp: ScriptedIdp = {
    issuer: "",
    nextIdToken: null,
    lastTokenRequest: null,
    idToken: async (claims, o = {}) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: "RS256", kid: "k1" })
        .setIssuer(o.iss ?? idp.issuer)
        .setAudience(o.aud ?? "console")
        .setSubject(o.sub ?? "sub-1")
        .setIssuedAt(Math.floor((o.at ?? Date.now()) / 1000))
        .setExpirationTime(Math.floor((o.at ?? Date.now()) / 1000) + 300)
        .sign((o.key ?? signing).privateKey),
    stop: async () => server.stop(true),
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const u = new URL(req.url);
      const issuer = idp.issuer;
      if (u.pathname === "/.well-known/openid-configuration") {
        return Response.json({ issuer, authorization_endpoint: `${issuer}/auth`, token_endpoint: `${issuer}/token`, jwks_uri: `${issuer}/jwks` });
      }
      if (u.pathname === "/jwks") return Response.json({ keys: [jwk] });
      if (u.pathname === "/token") {
        const form = new URLSearchParams(await req.text());
        idp.lastTokenRequest = { verifier: form.get("code_verifier"), auth: req.headers.get("authorization") };
        return Response.json({ access_token: "at", token_type: "Bearer", id_token: idp.nextIdToken });
      }
      return new Response("not found", { status: 404 });
    },
  });
  idp.issuer = `http://127.0.0.1:${server.port}`;
  return idp;
}
