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
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
// @ts-expect-error -- oidc-provider ships no type declarations (devDependency, tests only)
import Provider, { errors } from "oidc-provider";
import { freePort } from "./controlplane-process.ts";
import { mcpServersBin } from "./mcp/servers.ts";
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
  const tls = testTls();
  const dir = mkdtempSync(join(tmpdir(), "svc-mcp-oauth-notes-"));
  const callLog = join(dir, "calls.jsonl");
  writeFileSync(callLog, "");
  const argv = [
    join(mcpServersBin(), "python"),
    join(import.meta.dir, "mcp/oauth_notes_server.py"),
    "--port",
    String(port),
    "--cert",
    tls.certFile,
    "--key",
    tls.keyFile,
    "--calls",
    callLog,
    "--issuer",
    issuer,
    "--jwks",
    `${issuer}/jwks`,
    "--ca",
    tls.caFile,
  ];
  const proc = Bun.spawn(argv, { stdout: "ignore", stderr: "inherit" });
  const url = `https://127.0.0.1:${port}/mcp`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`oauth_notes_server.py exited with ${proc.exitCode}`);
    const up = await fetch(url, { method: "GET", tls: { ca: tls.ca }, signal: AbortSignal.timeout(1000) } as RequestInit).then(
      () => true,
      () => false,
    );
    if (up) break;
    if (Date.now() > deadline) throw new Error("oauth_notes_server.py did not answer within 30 s");
    await Bun.sleep(200);
  }
  return {
    url,
    calls: () =>
      readFileSync(callLog, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
    async stop() {
      proc.kill();
      await proc.exited;
    },
  };
}
