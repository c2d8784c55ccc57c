// `svc tool-servers tokens list|revoke|connect` (issue 32): the users' OAuth grants for a tool
// server created with `--auth oauth`. Lists show who (user, subject at the server), where and
// until when, never a token; revoking deletes the grant (that user's next call asks for
// consent again) and revokes it at the authorization server. `connect` prints the consent
// link of the server's listing grant, the token runtimes list its tools with. Every change is
// an event of the admin trail. Also the `--auth oauth` flags of `svc tool-servers create`.
import { UsageError, command } from "../../command/index.ts";
import type { ToolServerGrantList } from "../../contract/admin-api.ts";
import { type OrgClient, connect, seg } from "../shared/client.ts";
import { jsonFlag, note, out, printJson, printList } from "../shared/output.ts";
import { readStdinSecret, refuseTerminalStdin } from "../shared/stdin-secret.ts";
import { type Server, serverArg, workspaceArg } from "./flags.ts";

const serverPath = (client: OrgClient, ref: string, rest = "") => client.org(`/tool-servers/${seg(ref)}${rest}`);

export const oauthFlags = {
  auth: { type: "string", description: "secrets (default: sealed headers or environment) or oauth (each user's own OAuth token; http only)", valueHint: "secrets|oauth" },
  "oauth-client-id": { type: "string", description: "with --auth oauth: a client registered at the server's authorization server (default: dynamic registration)", valueHint: "client_id" },
  "oauth-client-secret": { type: "boolean", description: "with --oauth-client-id: read that client's secret from stdin" },
} as const;

const CLIENT_SECRET_ON_STDIN = {
  reader: "--oauth-client-secret",
  what: "the OAuth client's secret",
  example: 'printf %s "$CLIENT_SECRET" | svc tool-servers create github --url https://… --auth oauth --oauth-client-id … --oauth-client-secret --workspace default',
};

type OauthArgs = { auth?: string; "oauth-client-id"?: string; "oauth-client-secret"?: boolean; bearer?: boolean; secrets?: boolean; url?: string };

/** The create body's OAuth part, checked before anything is sent; the client secret read from stdin. */
export async function oauthBody(args: OauthArgs): Promise<Record<string, unknown>> {
  const auth = args.auth ?? "secrets";
  if (auth !== "secrets" && auth !== "oauth") throw new UsageError(`--auth must be secrets or oauth, got "${auth}"`);
  if (auth !== "oauth") {
    if (args["oauth-client-id"] !== undefined || args["oauth-client-secret"]) throw new UsageError("--oauth-client-id and --oauth-client-secret come with --auth oauth");
    return {};
  }
  if (args.url === undefined) throw new UsageError("--auth oauth is for http servers (--url): a stdio server has no authorization server");
  if (args.bearer || args.secrets) throw new UsageError("--auth oauth takes no --bearer or --secrets: each user's calls carry that user's own token");
  if (args["oauth-client-secret"] && args["oauth-client-id"] === undefined) throw new UsageError("--oauth-client-secret comes with --oauth-client-id");
  if (args["oauth-client-secret"]) refuseTerminalStdin(CLIENT_SECRET_ON_STDIN);
  const secret = args["oauth-client-secret"] ? (await readStdinSecret(CLIENT_SECRET_ON_STDIN)).trim() : undefined;
  return { auth: "oauth", ...(args["oauth-client-id"] ? { oauth_client_id: args["oauth-client-id"] } : {}), ...(secret ? { oauth_client_secret: secret } : {}) };
}

type Grant = ToolServerGrantList["grants"][number];

const list = command({
  meta: { name: "list", description: "List the users' OAuth grants for a tool server: user, subject at the server, expiry (never a token)" },
  args: { server: serverArg, workspace: workspaceArg, user: { type: "string", description: "only this service user's (usr_…)", valueHint: "user_id" }, ...jsonFlag },
  examples: ["svc tool-servers tokens list github --workspace default"],
  async run({ args }) {
    const client = await connect("svc tool-servers tokens list");
    const { grants } = await client.json<ToolServerGrantList>("GET", serverPath(client, args.server, "/tokens"), { query: { workspace: args.workspace, user_id: args.user } });
    printList(
      grants,
      [
        { header: "GRANT", value: (g: Grant) => g.id },
        { header: "SERVER", value: (g: Grant) => g.server },
        { header: "USER", value: (g: Grant) => g.user_id ?? "(listing)" },
        { header: "SUBJECT", value: (g: Grant) => g.subject },
        { header: "EXPIRES", value: (g: Grant) => g.expires_at },
        { header: "REFRESHABLE", value: (g: Grant) => (g.refreshable ? "yes" : "no") },
      ],
      { json: !!args.json, empty: `No grants for tool server ${args.server}: no user has consented yet.`, jsonValue: { grants } },
    );
  },
});

const revoke = command({
  meta: { name: "revoke", description: "Revoke a user's OAuth grant for a tool server (their next call asks for consent again; revoked at the authorization server too)" },
  args: { server: serverArg, grant: { type: "positional", required: true, description: "grant id (ogr_…), from tokens list", valueHint: "grant" }, workspace: workspaceArg, ...jsonFlag },
  examples: ["svc tool-servers tokens revoke github ogr_01J... --workspace default"],
  async run({ args }) {
    const client = await connect("svc tool-servers tokens revoke");
    const server = await client.json<Server>("GET", serverPath(client, args.server), { query: { workspace: args.workspace } });
    await client.json("DELETE", serverPath(client, server.id, `/tokens/${seg(args.grant)}`));
    if (args.json) return printJson({ grant: args.grant, revoked: true });
    out(`Revoked grant ${args.grant} of tool server ${server.name}.`);
  },
});

const connectListing = command({
  meta: { name: "connect", description: "Print the consent link of a tool server's listing grant: open it and sign in at the server's authorization server so runtimes can list its tools" },
  args: { server: serverArg, workspace: workspaceArg, ...jsonFlag },
  examples: ["svc tool-servers tokens connect github --workspace default"],
  async run({ args }) {
    const client = await connect("svc tool-servers tokens connect");
    const server = await client.json<Server>("GET", serverPath(client, args.server), { query: { workspace: args.workspace } });
    const link = await client.json<{ url: string; expires_at: string }>("POST", serverPath(client, server.id, "/tokens/listing"));
    if (args.json) return printJson(link);
    out(link.url);
    note(`Open it within 15 minutes and sign in at the authorization server (an account that may list the tools; it is used for tools/list only, never for a user's call).`);
  },
});

export const tokensCommand = command({
  meta: { name: "tokens", description: "The users' OAuth grants for a tool server created with --auth oauth" },
  examples: ["svc tool-servers tokens list github --workspace default"],
  subCommands: { list, revoke, connect: connectListing },
});
