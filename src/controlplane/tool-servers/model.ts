// Request schemas of the tool-server routes. The rules that need words (name, URL, command,
// secret names) are checked by the service with contract/tool-server.ts, not here.
import { t } from "elysia";

const SecretsSealed = t.String({ minLength: 1, maxLength: 65536, description: "base64 of the binary age file holding a JSON object {name: value}" });
const SecretNames = t.Array(t.String({ minLength: 1, maxLength: 100 }), { maxItems: 32, description: "header (http) or environment variable (stdio) names the sealed object holds" });
const SealedTo = t.Array(t.String({ minLength: 1, maxLength: 64 }), { maxItems: 1000, description: "replica ids the secrets were sealed to" });
/** Declared only to refuse them with a clear message: the service never takes plaintext secrets. */
const Plaintext = t.Optional(t.Unknown({ description: "refused: seal the secrets to the runtimes and send secrets_sealed" }));
const ToolName = t.String({ minLength: 1, maxLength: 128 });
export const AllowedTools = t.Union([t.Array(ToolName, { maxItems: 1000 }), t.Null()], { description: "upstream tool names served; null or absent = all" });
export const AccessOverrides = t.Record(t.String({ minLength: 1, maxLength: 128 }), t.Union([t.Literal("read"), t.Literal("write")]), {
  maxProperties: 1000,
  description: "upstream tool name → read|write, overriding the MCP annotations",
});

export const ServerCreate = t.Object({
  name: t.String({ minLength: 1, maxLength: 64 }),
  workspace: t.String({ minLength: 1, maxLength: 100 }),
  transport: t.Union([t.Literal("http"), t.Literal("stdio")]),
  url: t.Optional(t.String({ maxLength: 2048 })),
  command: t.Optional(t.String({ maxLength: 1024 })),
  args: t.Optional(t.Array(t.String({ maxLength: 4096 }), { maxItems: 64 })),
  secrets_sealed: t.Optional(SecretsSealed),
  secret_names: t.Optional(SecretNames),
  sealed_to: t.Optional(SealedTo),
  allowed_tools: t.Optional(AllowedTools),
  access_overrides: t.Optional(AccessOverrides),
  auth: t.Optional(t.Union([t.Literal("secrets"), t.Literal("oauth")], { description: "oauth: each user's own OAuth token (http only; issue 32); default secrets" })),
  oauth_client_id: t.Optional(
    t.String({ minLength: 1, maxLength: 256, description: "oauth: a client an admin registered at the server's authorization server; absent: dynamic registration (RFC 7591)" }),
  ),
  oauth_client_secret: t.Optional(
    t.String({ minLength: 1, maxLength: 1024, description: "oauth: that client's secret; the control plane itself uses it, so it keeps it wrapped by its KMS, never shown again" }),
  ),
  assertion_header: t.Optional(
    t.Union([t.String({ minLength: 1, maxLength: 100 }), t.Null()], { description: "http: the header each request carries a signed identity assertion in (null: none); not a secret header's name" }),
  ),
  assertion_audience: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 512 }), t.Null()], { description: "the assertion's aud (null or absent: the server's url)" })),
  secrets: Plaintext,
  headers: Plaintext,
  env: Plaintext,
});

/**
 * PATCH: create's fields but the ones that cannot change, every one optional; name and
 * transport are declared only to refuse them by name.
 */
export const ServerUpdate = t.Object({
  ...t.Partial(t.Omit(ServerCreate, ["name", "workspace", "transport", "auth", "oauth_client_id", "oauth_client_secret"])).properties,
  name: t.Optional(t.Unknown({ description: "refused: a server's name cannot change" })),
  transport: t.Optional(t.Unknown({ description: "refused: a server's transport cannot change" })),
});

export const ServerSecrets = t.Object({ secrets_sealed: SecretsSealed, secret_names: SecretNames, sealed_to: SealedTo, secrets: Plaintext, headers: Plaintext, env: Plaintext });
export const ServerTools = t.Object({ allowed_tools: AllowedTools, access_overrides: AccessOverrides });
export const ServerAssign = t.Object({ agent_id: t.String({ minLength: 1, maxLength: 64 }) });
export const ServerParams = t.Object({ org: t.String(), id: t.String({ minLength: 1, maxLength: 200 }) });
export const AssignParams = t.Object({ org: t.String(), id: t.String({ minLength: 1, maxLength: 200 }), agent: t.String({ minLength: 1, maxLength: 64 }) });
export const ServerQuery = t.Object({ workspace: t.Optional(t.String({ maxLength: 100 })) });
