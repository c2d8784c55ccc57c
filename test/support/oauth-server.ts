// A real OAuth 2.1 authorization server for per-user OAuth to MCP servers (issue 32): the
// `oidc-provider` package (9.x, a certified OpenID provider) over https (the test CA), with
// PKCE (S256) required, resource indicators (RFC 8707: access tokens are JWTs whose `aud` is
// the MCP server), refresh tokens (rotating), dynamic client registration (RFC 7591),
// revocation (RFC 7009), and its development login and consent pages (any login name; the
// subject is the login name; `emails` gives a login name an `email` claim, in the ID token of
// a flow that asks for `openid email`). Beside it, oauth_notes_server.py: the MCP resource server that
// verifies those tokens and echoes the caller's subject.
import { generateKeyPairSync } from "node:crypto";
import { createServer, type Server } from "node:https";
// @ts-expect-error -- oidc-provider ships no type declarations (devDependency, tests only)
import Provider, { errors } from "oidc-provider";
import type { Page } from "playwright-core";
import { freePort } from "./controlplane-process.ts";
import { startPythonMcpServer } from "./mcp/python-https.ts";
import { testTls } from "./tls.ts";

export type OAuthTestServer = {
  issuer: string;
  /** The provider, for tests that act as the user at the provider (revoking a grant there). */
  provider: { Grant: { find(id: string): Promise<{ destroy(): Promise<void> } | undefined> } };
  stop(): Promise<void>;
};

/** oidc-provider on https; `resource` is the one resource server it issues tokens for. */
export async function startOAuthServer(opts: {
  resource: string;
  accessTokenTtlSeconds?: number;
  staticClient?: { id: string; secret: string; redirectUri: string };
  emails?: Record<string, string>;
}): Promise<OAuthTestServer> {
  const tls = testTls();
  const port = freePort();
  const issuer = `https://127.0.0.1:${port}`;
  const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  const jwk = { ...(privateKey.export({ format: "jwk" }) as Record<string, unknown>), kid: "svc-test-1", alg: "RS256", use: "sig" };
  const provider = new Provider(issuer, {
    jwks: { keys: [jwk] },
    clients: opts.staticClient
      ? [
          {
            client_id: opts.staticClient.id,
            client_secret: opts.staticClient.secret,
            redirect_uris: [opts.staticClient.redirectUri],
            grant_types: ["authorization_code", "refresh_token"],
            response_types: ["code"],
            token_endpoint_auth_method: "client_secret_basic",
          },
        ]
      : [],
    pkce: { required: () => true },
    scopes: ["openid", "offline_access", "email", "notes"],
    claims: { openid: ["sub"], email: ["email", "email_verified"] },
    // The scope's claims in the ID token from the token endpoint too (as most providers do),
    // not only at userinfo: svc reads who signed in from there.
    conformIdTokenClaims: false,
    cookies: { keys: ["svc-test-oauth-cookie-key"] },
    ttl: { AccessToken: opts.accessTokenTtlSeconds ?? 300, RefreshToken: 3600, Grant: 3600, Session: 3600, Interaction: 600 },
    issueRefreshToken: async (_ctx: unknown, client: { grantTypeAllowed(g: string): boolean }) => client.grantTypeAllowed("refresh_token"),
    features: {
      devInteractions: { enabled: true },
      registration: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: async (_ctx: unknown, _client: unknown, oneOf?: string) => oneOf ?? undefined,
        useGrantedResource: async () => true,
        getResourceServerInfo: async (_ctx: unknown, indicator: string) => {
          if (indicator !== opts.resource) throw new errors.InvalidTarget(`unknown resource ${indicator}`);
          return { scope: "notes", audience: indicator, accessTokenTTL: opts.accessTokenTtlSeconds ?? 300, accessTokenFormat: "jwt", jwt: { sign: { alg: "RS256" } } };
        },
      },
    },
    async findAccount(_ctx: unknown, id: string) {
      const email = opts.emails?.[id];
      return { accountId: id, claims: async () => ({ sub: id, ...(email ? { email, email_verified: true } : {}) }) };
    },
  });
  const server: Server = createServer({ cert: tls.cert, key: tls.key }, provider.callback());
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return { issuer, provider, stop: async () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

export type OAuthNotesServer = { url: string; calls(): Array<{ tool: string; subject?: string | null; why?: string }>; stop(): Promise<void> };

/** oauth_notes_server.py over https: verifies the issuer's JWT access tokens for its own URL. */
export async function startOAuthNotesServer(port: number, issuer: string): Promise<OAuthNotesServer> {
  const args = ["--issuer", issuer, "--jwks", `${issuer}/jwks`, "--ca", testTls().caFile];
  const s = await startPythonMcpServer<{ tool: string; subject?: string | null; why?: string }>("oauth_notes_server.py", { port, logFlag: "--calls", args });
  return { url: s.url, calls: s.entries, stop: s.stop };
}

/**
 * Follows a consent link in `page`: presses Continue on svc's consent page (unless `atProvider`:
 * the URL is already the authorization server's), signs in as `login` at the provider's
 * development pages (any password) and consents; resolves with the text svc's page showed and
 * the text of the page it comes back to at `returnOrigin`.
 */
export async function consentAtProvider(page: Page, url: string, o: { issuer: string; returnOrigin: string; login: string; atProvider?: boolean }): Promise<{ shown: string; done: string }> {
  await page.goto(url);
  let shown = "";
  if (!o.atProvider) {
    // svc's own page first: which server, for which user, and a warning to anyone else
    shown = (await page.locator("main").textContent()) ?? "";
    await page.getByRole("button", { name: "Continue to the tool's sign-in" }).click();
  }
  await page.waitForURL((u) => u.origin === o.issuer);
  await page.locator("input[name=login]").fill(o.login);
  await page.locator("input[name=password]").fill("anything");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await page.getByRole("button", { name: "Continue" }).click();
  await page.waitForURL((u) => u.origin === o.returnOrigin);
  return { shown, done: (await page.locator("body").textContent()) ?? "" };
}
