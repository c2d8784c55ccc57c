// The flags of `svc tool-servers` and what they turn into: one definition of the flags that
// define a server (endpoint, secrets, allow-list, access overrides), taken whole by `create`
// and, each one optional, by `update`; their checks with the control plane's own rules
// (contract/tool-server.ts), made before a secret is read; the sealing of stdin's secrets to
// the scope's runtimes; and how a server is printed.
import { checkAssertionAudience, checkAssertionHeader } from "../../contract/identity-assertion.ts";
import { UsageError, listFlag } from "../../command/index.ts";
import { type Transport, checkArgs, checkCommand, checkSecretNames, checkServerUrl, checkToolName, parseSecretLines } from "../../contract/tool-server.ts";
import type { ToolServerDetail, ToolServerReadiness as Readiness } from "../../contract/admin-api.ts";
import type { OrgClient } from "../shared/client.ts";
import { note, renderFields, renderTable } from "../shared/output.ts";
import { type RuntimeRecipient, apiKeyFromStdinText, sealApiKey, usableRecipients } from "../shared/sealing.ts";
import { type StdinSecret, readStdinSecret, refuseTerminalStdin } from "../shared/stdin-secret.ts";

export type Server = ToolServerDetail;
type Sealed = { secrets_sealed: string; secret_names: string[]; sealed_to: string[] };

export const workspaceArg = { type: "string", required: true, description: "workspace id or name", valueHint: "workspace" } as const;
export const serverArg = { type: "positional", required: true, description: "server id (ts_…) or name", valueHint: "server" } as const;
export const agentArg = { type: "string", required: true, description: "agent id (agt_…)", valueHint: "agent_id" } as const;

export const secretFlags = {
  bearer: { type: "boolean", description: "http: read a bearer token (one line) from stdin; sent as Authorization: Bearer <token>" },
  secrets: { type: "boolean", description: "read NAME=value lines from stdin: header names (http) or environment variables (stdio)" },
} as const;
export const toolFlags = {
  allow: { type: "string", description: 'serve only these upstream tools (comma-separated); "*" serves all', valueHint: "tools" },
  access: { type: "string", description: 'tool=read|write overrides (comma-separated); "-" removes them', valueHint: "overrides" },
} as const;
/** Every flag that defines a server: `create` takes them (url or command), `update` any of them. */
export const definitionFlags = {
  url: { type: "string", description: "http transport: the Streamable HTTP endpoint (https; no credentials, query or fragment)", valueHint: "url" },
  command: { type: "string", description: "stdio transport: the program installed in the image", valueHint: "program" },
  args: { type: "string", description: "stdio: its arguments, comma-separated or a JSON array", valueHint: "args" },
  ...secretFlags,
  ...toolFlags,
  "assertion-header": {
    type: "string",
    description: 'http: send a signed identity assertion (a 60 s JWT naming the user) in this header on every request; "-" stops it (docs/mcp.md)',
    valueHint: "header",
  },
  "assertion-audience": { type: "string", description: "the assertion's aud (default: the server's url)", valueHint: "audience" },
} as const;

type DefinitionArgs = {
  url?: string;
  command?: string;
  args?: string;
  bearer?: boolean;
  secrets?: boolean;
  allow?: string;
  access?: string;
  "assertion-header"?: string;
  "assertion-audience"?: string;
};
/** The definition flags, checked; each is undefined when not given. `allowed` null: every tool; `assertionHeader` null: none. */
export type Definition = {
  url?: string;
  command?: string;
  args?: string[];
  allowed?: string[] | null;
  access?: Record<string, "read" | "write">;
  assertionHeader?: string | null;
  assertionAudience?: string;
  stdin: boolean;
};

const BEARER_ON_STDIN: StdinSecret = {
  reader: "--bearer",
  what: "the bearer token",
  example: 'printf %s "$GITHUB_TOKEN" | svc tool-servers create github --url https://… --bearer --workspace default',
};
const SECRETS_ON_STDIN: StdinSecret = {
  reader: "--secrets",
  what: "NAME=value lines",
  example: 'printf "GITHUB_TOKEN=%s\\n" "$GITHUB_TOKEN" | svc tool-servers create … --secrets --workspace default',
};

export function refuseRule(check: { ok: true } | { ok: false; message: string }, flag: string): void {
  if (!check.ok) throw new UsageError(`${check.message}; fix ${flag} and run it again`);
}

/** `--args`: a JSON array of strings (`'["--repository","/srv/repo"]'`) or a comma-separated list. Pure. */
export function parseArgsFlag(value: string): string[] {
  if (!value.trimStart().startsWith("[")) {
    const items = value.split(",");
    if (items.some((a) => a === "")) throw new UsageError(`--args "${value}" has an empty item; write e.g. --args=--local-timezone,UTC, or a JSON array for arguments holding commas`);
    return items;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    throw new UsageError(`--args "${value}" starts with "[" but is not a JSON array; write e.g. --args '["--repository","/srv/repo"]'`);
  }
  if (!Array.isArray(parsed) || parsed.some((a) => typeof a !== "string")) throw new UsageError(`--args must be a JSON array of strings, e.g. --args '["--repository","/srv/repo"]'`);
  return parsed as string[];
}

/** `--access a=read,b=write` → {a: "read", b: "write"}; `-` → {} (no overrides). Pure. */
export function parseAccessFlag(value: string): Record<string, "read" | "write"> {
  const outMap: Record<string, "read" | "write"> = {};
  if (value === "-") return outMap;
  for (const item of listFlag("access", value, "list_issues=read,create_issue=write")) {
    const m = /^([^=]+)=(read|write)$/.exec(item);
    if (!m) throw new UsageError(`--access item "${item}" is not tool=read or tool=write, e.g. --access create_issue=write`);
    refuseRule(checkToolName(m[1]!.trim(), "/access_overrides"), "--access");
    // An own property even for "__proto__": a tool's name is a name, not the object's prototype.
    Object.defineProperty(outMap, m[1]!.trim(), { value: m[2] as "read" | "write", enumerable: true, writable: true, configurable: true });
  }
  return outMap;
}

/** `--allow a,b` → [a, b]; `*` → null (every tool the server lists). Pure. */
export function parseAllowFlag(value: string): string[] | null {
  if (value === "*") return null;
  const tools = listFlag("allow", value, "list_issues,create_issue");
  for (const t of tools) refuseRule(checkToolName(t, "/allowed_tools"), "--allow");
  return tools;
}

/** Checks every definition flag given, before anything is read from stdin or sent. */
export function checkDefinition(a: DefinitionArgs): Definition {
  const d: Definition = { stdin: !!(a.bearer || a.secrets) };
  if (a.url !== undefined) {
    const check = checkServerUrl(a.url);
    if (!check.ok) throw new UsageError(`${check.message}; fix --url and run it again`, check.code);
    d.url = check.endpoint;
  }
  if (a.command !== undefined) refuseRule(checkCommand((d.command = a.command)), "--command");
  if (a.args !== undefined) refuseRule(checkArgs((d.args = parseArgsFlag(a.args))), "--args");
  if (a.allow !== undefined) d.allowed = parseAllowFlag(a.allow);
  if (a.access !== undefined) d.access = parseAccessFlag(a.access);
  if (d.allowed && d.access) {
    const outside = Object.keys(d.access).filter((t) => !d.allowed!.includes(t));
    if (outside.length) throw new UsageError(`--access names tools outside --allow: ${outside.join(", ")}; add them to --allow or drop them`);
  }
  const header = a["assertion-header"];
  if (header !== undefined) {
    // Secret headers are checked by the control plane: their names are known only once stdin is read.
    if (header !== "-") refuseRule(checkAssertionHeader(header, []), "--assertion-header");
    d.assertionHeader = header === "-" ? null : header;
  }
  if (a["assertion-audience"] !== undefined) {
    if (d.assertionHeader === null) throw new UsageError("--assertion-audience comes with an assertion header; drop it when passing --assertion-header -");
    refuseRule(checkAssertionAudience((d.assertionAudience = a["assertion-audience"])), "--assertion-audience");
  }
  if (a.bearer && a.secrets) throw new UsageError("--bearer and --secrets both read stdin; pass one (a bearer token is also Authorization=Bearer <token> under --secrets)");
  return d;
}

/** What a checked definition sends to the control plane (POST or PATCH /tool-servers), secrets aside. */
export function definitionBody(d: Definition): Record<string, unknown> {
  return {
    ...(d.url !== undefined ? { url: d.url } : {}),
    ...(d.command !== undefined ? { command: d.command } : {}),
    ...(d.args !== undefined ? { args: d.args } : {}),
    ...(d.allowed !== undefined ? { allowed_tools: d.allowed } : {}),
    ...(d.access !== undefined ? { access_overrides: d.access } : {}),
    ...(d.assertionHeader !== undefined ? { assertion_header: d.assertionHeader } : {}),
    ...(d.assertionAudience !== undefined ? { assertion_audience: d.assertionAudience } : {}),
  };
}

/** Which secret flag is set, checked against the transport before anything is read. */
export function secretMode(args: { bearer?: boolean; secrets?: boolean }, transport: Transport): "bearer" | "lines" | null {
  if (args.bearer && args.secrets) throw new UsageError("--bearer and --secrets both read stdin; pass one (a bearer token is also Authorization=Bearer <token> under --secrets)");
  if (args.bearer && transport !== "http") throw new UsageError("--bearer is for http servers (a header); give a stdio server its token as an environment variable with --secrets");
  if (args.bearer) return "bearer";
  return args.secrets ? "lines" : null;
}

/** Refuses a terminal on stdin when a secret flag is set (before anything is sent). */
export function refuseTerminalFor(args: { bearer?: boolean; secrets?: boolean }): void {
  if (args.bearer || args.secrets) refuseTerminalStdin(args.bearer ? BEARER_ON_STDIN : SECRETS_ON_STDIN);
}

/** Reads the secrets from stdin, seals them to the scope's live runtimes; refuses when none can receive them. */
export async function sealFromStdin(client: OrgClient, mode: "bearer" | "lines", transport: Transport, workspace: string, agent: string | undefined): Promise<Sealed> {
  const scope = `workspace ${workspace}${agent ? ` (agent ${agent})` : ""}`;
  const { recipients } = await client.json<{ recipients: RuntimeRecipient[] }>("GET", client.org("/runtime-recipients"), { query: { workspace, agent_id: agent } });
  const usable = usableRecipients(recipients ?? []);
  if (usable.length === 0) {
    throw client.fail(
      `no runtime in ${scope} can receive the secrets (none has registered a credential-sync key lately); start a runtime for this scope first so it registers its key, then run this command again`,
      "no_runtime_recipient",
    );
  }
  let secrets: Record<string, string>;
  if (mode === "bearer") {
    const token = apiKeyFromStdinText(await readStdinSecret(BEARER_ON_STDIN));
    if (!token) throw new UsageError("stdin holds more than one line; pipe only the bearer token, on one line");
    secrets = { Authorization: `Bearer ${token}` };
  } else {
    const parsed = parseSecretLines(await readStdinSecret(SECRETS_ON_STDIN));
    if (!parsed.ok) throw new UsageError(`${parsed.message}; pipe one NAME=value line per secret`);
    secrets = parsed.secrets;
  }
  const names = Object.keys(secrets);
  const named = checkSecretNames(transport, names);
  if (!named.ok) throw new UsageError(`${named.message}; fix the names on stdin`);
  const sealed = await sealApiKey(JSON.stringify(secrets), usable);
  note(`Sealed ${names.length} secret(s) (${names.join(", ")}) to ${usable.length} runtime replica(s): ${sealed.sealed_to.join(", ")}.`);
  return { secrets_sealed: sealed.api_key_sealed, secret_names: names, sealed_to: sealed.sealed_to };
}

export function serverFields(s: Server): string {
  const overrides = Object.entries(s.access_overrides);
  return renderFields([
    ["server", s.id],
    ["name", s.name],
    ["governed as", `tool:${s.name}.<tool>`],
    ["transport", s.transport],
    s.transport === "http" ? ["url", s.url] : ["command", [s.command ?? "", ...s.args].map((a) => (/\s/.test(a) ? JSON.stringify(a) : a)).join(" ")],
    ["workspace", s.workspace_id],
    ["secrets", s.has_secrets ? `${s.secret_names.join(", ")} (sealed to ${s.sealed_to.join(", ") || "-"})` : "none"],
    ...(s.auth === "oauth" ? [["auth", "oauth (each user's own token: svc tool-servers tokens list)"] as const] : []),
    ["tools served", s.allowed_tools ? s.allowed_tools.join(", ") : "all it lists"],
    ...(s.transport === "http" ? [["assertion", s.assertion ? `signed identity in ${s.assertion.header} (aud ${s.assertion.audience})` : "none"] as const] : []),
    ["access overrides", overrides.length ? overrides.map(([t, a]) => `${t}=${a}`).join(", ") : "none (read when readOnlyHint, else write)"],
    ...(s.assigned_agents ? [["assigned to", s.assigned_agents.join(", ") || "no agent"] as const] : []),
  ]);
}

export function runtimeTable(r: Readiness): string {
  return renderTable(r.runtimes, [
    { header: "REPLICA", value: (x) => x.replica_id },
    { header: "INSTALLATION", value: (x) => x.installation_id },
    { header: "STATE", value: (x) => (x.state === "not_reported" ? "not reported" : x.state) },
    { header: "TOOLS", value: (x) => x.tool_count },
    { header: "ERROR", value: (x) => x.error },
  ]);
}

/** The tools the runtimes listed from a server (`svc tool-servers show`, issue 31): governed name, name at the server, access, served or why not. */
export function toolTable(tools: NonNullable<Server["tools"]>): string {
  return renderTable(tools, [
    { header: "TOOL", value: (t) => t.name },
    { header: "UPSTREAM", value: (t) => t.upstream },
    { header: "ACCESS", value: (t) => t.access },
    { header: "SERVED", value: (t) => (t.served ? "yes" : `no: ${t.why ?? "not served"}`) },
  ]);
}
