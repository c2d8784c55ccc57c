// What a tool-server request may hold, checked before any query: the transport's endpoint,
// the allow-list and overrides, and the sealed secrets' form (never a plaintext secret).
import { SvcError } from "../../contract/errors.ts";
import { checkAssertionAudience, checkAssertionHeader } from "../../contract/identity-assertion.ts";
import { type RuleCheck, type Transport, checkArgs, checkCommand, checkSecretNames, checkServerUrl, checkToolName } from "../../contract/tool-server.ts";
import { checkSealedKey } from "../model-profiles/sealed-key.ts";

type Access = "read" | "write";

export const PLAINTEXT_SECRETS_MESSAGE =
  "the service never receives plaintext secrets: seal them to the runtimes' credential-sync keys (GET runtime-recipients) and send secrets_sealed with secret_names and sealed_to; `svc tool-servers create --bearer` or `--secrets` does this";

export function refuse(path: string, message: string): never {
  throw new SvcError("validation_failed", message, { errors: [{ path, message }] });
}
export function must(check: RuleCheck): void {
  if (!check.ok) refuse(check.path, check.message);
}
export function refusePlaintext(body: { secrets?: unknown; headers?: unknown; env?: unknown }): void {
  for (const k of ["secrets", "headers", "env"] as const) if (body[k] !== undefined) refuse(`/${k}`, PLAINTEXT_SECRETS_MESSAGE);
}

export type ToolRules = { allowed_tools?: string[] | null; access_overrides?: Record<string, Access> };

export function toolRulesOrThrow(input: ToolRules): { allowedTools: string[] | null; accessOverrides: Record<string, Access> } {
  const allowed = input.allowed_tools ? [...new Set(input.allowed_tools)] : null;
  allowed?.forEach((t, i) => must(checkToolName(t, `/allowed_tools/${i}`)));
  const overrides = input.access_overrides ?? {};
  for (const t of Object.keys(overrides)) must(checkToolName(t, `/access_overrides/${t}`));
  if (allowed) {
    const outside = Object.keys(overrides).filter((t) => !allowed.includes(t));
    if (outside.length) refuse("/access_overrides", `access_overrides names tools outside allowed_tools: ${outside.join(", ")} (they would never be served)`);
  }
  return { allowedTools: allowed ? allowed.sort() : null, accessOverrides: Object.fromEntries(Object.entries(overrides).sort(([a], [b]) => (a < b ? -1 : 1))) };
}

export type SealedInput = { secrets_sealed?: string; secret_names?: string[]; sealed_to?: string[] };

/** The form of the sealed secrets, before any query. */
export function sealedFormOrThrow(transport: Transport, input: SealedInput): { sealed: string; names: string[] } | null {
  if (input.secrets_sealed === undefined) {
    if (input.secret_names?.length || input.sealed_to?.length) refuse("/secrets_sealed", "secret_names and sealed_to come with secrets_sealed");
    return null;
  }
  checkSealedKey(input.secrets_sealed, "secrets_sealed");
  must(checkSecretNames(transport, input.secret_names ?? []));
  return { sealed: input.secrets_sealed, names: input.secret_names! };
}

export type OauthInput = { auth?: "secrets" | "oauth"; oauth_client_id?: string; oauth_client_secret?: string };

/**
 * `auth: oauth` (issue 32): an http server whose calls carry each user's own token, so it takes
 * no sealed secrets (they would be one identity for every user); its client is an admin's
 * (id, and secret for a confidential client) or, absent, registered dynamically at the first consent.
 */
export function oauthInputOrThrow(input: ServerInput): { clientId: string | null; clientSecret: string | null } | null {
  if (input.auth !== "oauth") {
    if (input.oauth_client_id !== undefined || input.oauth_client_secret !== undefined)
      refuse(input.oauth_client_id !== undefined ? "/oauth_client_id" : "/oauth_client_secret", 'oauth_client_id and oauth_client_secret come with auth "oauth"');
    return null;
  }
  if (input.transport !== "http") refuse("/auth", 'auth "oauth" is for http servers: a stdio server runs in the image and has no authorization server');
  if (input.secrets_sealed !== undefined) refuse("/secrets_sealed", "a server with auth \"oauth\" takes no sealed secrets: each user's calls carry that user's own token");
  if (input.assertion_header !== undefined && input.assertion_header !== null)
    refuse("/assertion_header", "a server with auth \"oauth\" takes no identity assertion: each user's calls carry that user's own token");
  if (input.oauth_client_secret !== undefined && input.oauth_client_id === undefined) refuse("/oauth_client_secret", "oauth_client_secret comes with oauth_client_id");
  return { clientId: input.oauth_client_id ?? null, clientSecret: input.oauth_client_secret ?? null };
}
export type AssertionInput = { assertion_header?: string | null; assertion_audience?: string | null };

/**
 * The identity-assertion settings as they will be stored (issue 32): http only, a header name
 * that is not reserved and not one of the server's secret headers (`secretNames`: as they will
 * be after the change), an audience only with a header.
 */
export function assertionOrThrow(
  transport: Transport,
  input: { header: string | null; audience: string | null },
  secretNames: readonly string[],
): { assertionHeader: string | null; assertionAudience: string | null } {
  if (input.header === null) {
    if (input.audience !== null) refuse("/assertion_audience", "assertion_audience comes with assertion_header: the header the assertion is sent in");
    return { assertionHeader: null, assertionAudience: null };
  }
  if (transport !== "http") refuse("/assertion_header", 'identity assertions are sent as an HTTP header: only a transport "http" server takes assertion_header');
  must(checkAssertionHeader(input.header, secretNames));
  if (input.audience !== null) must(checkAssertionAudience(input.audience));
  return { assertionHeader: input.header, assertionAudience: input.audience };
}

export type ServerInput = ToolRules &
  SealedInput &
  OauthInput &
  AssertionInput & { name: string; transport: Transport; url?: string; command?: string; args?: string[]; secrets?: unknown; headers?: unknown; env?: unknown };

/** The transport's endpoint: an https URL (http) or a command with args (stdio), never both. */
export function endpointOrThrow(input: ServerInput): { url: string | null; command: string | null; args: string[] } {
  if (input.transport === "http") {
    if (input.command !== undefined || input.args?.length) refuse("/command", 'transport "http" takes a url, not a command or args');
    if (input.url === undefined) refuse("/url", 'transport "http" needs url: the server\'s Streamable HTTP endpoint (https)');
    const check = checkServerUrl(input.url);
    if (!check.ok) throw new SvcError(check.code, check.message, { errors: [{ path: "/url", message: check.message }] });
    return { url: check.endpoint, command: null, args: [] };
  }
  if (input.url !== undefined) refuse("/url", 'transport "stdio" takes a command (installed in the image) and args, not a url');
  if (input.command === undefined) refuse("/command", 'transport "stdio" needs command: the program installed in the image layer');
  must(checkCommand(input.command));
  const args = input.args ?? [];
  must(checkArgs(args));
  return { url: null, command: input.command, args };
}
