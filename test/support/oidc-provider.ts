// A real OpenID Connect provider for console SSO tests: the `oidc-provider` package (9.x) on a
// free loopback port, with its development login and consent pages (any login name is
// accepted; the account's claims come from the `accounts` table given here). One confidential
// client with the console's redirect URI; PKCE required.
import { createServer, type Server } from "node:http";
// @ts-expect-error -- oidc-provider ships no type declarations (devDependency, tests only)
import Provider from "oidc-provider";
import { freePort } from "./controlplane-process.ts";

export type OidcTestAccount = { email: string; emailVerified: boolean; name?: string };

export type OidcTestProvider = {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Login names accepted by the provider's sign-in page, and the claims each gets. */
  accounts: Map<string, OidcTestAccount>;
  stop(): Promise<void>;
};

export async function startOidcProvider(opts: { redirectUri: string; host?: string; clientId?: string; clientSecret?: string }): Promise<OidcTestProvider> {
  const port = freePort();
  const issuer = `http://${opts.host ?? "127.0.0.1"}:${port}`;
  const clientId = opts.clientId ?? "svc-console";
  const clientSecret = opts.clientSecret ?? "svc-console-test-secret-0123456789";
  const accounts = new Map<string, OidcTestAccount>();
  const provider: { callback(): Parameters<typeof createServer>[1] } = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [opts.redirectUri],
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_basic",
      },
    ],
    pkce: { required: () => true },
    claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
    cookies: { keys: ["svc-test-cookie-key"] },
    async findAccount(_ctx: unknown, id: string) {
      const a = accounts.get(id);
      if (!a) return undefined;
      return {
        accountId: id,
        async claims() {
          return { sub: id, email: a.email, email_verified: a.emailVerified, ...(a.name ? { name: a.name } : {}) };
        },
      };
    },
  });
  const server: Server = createServer(provider.callback());
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    issuer,
    clientId,
    clientSecret,
    accounts,
    stop: async () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
