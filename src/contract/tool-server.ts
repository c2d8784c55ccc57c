// The rules of an MCP tool server's definition (issue 13), pure and shared by the control plane
// (on write, in readiness) and `svc tool-servers create` (before a secret is read), so both say
// the same. The server name is the prefix of governed tool names: `<server>.<tool>` must fit
// the manifest's tool-name pattern (patterns.ts TOOL_NAME_RE), so the server part takes letters,
// digits, `_` and `-`; the tool part is the upstream name mapped by mcp-names.ts, so the tool
// names an admin writes (allow-list, overrides) are MCP names as the server lists them. An http server's URL follows
// the model endpoint rule (model-endpoint.ts) except that it names the MCP endpoint itself.
import { checkEndpoint, type EndpointCheck } from "./model-endpoint.ts";

export const TRANSPORTS = ["http", "stdio"] as const;
export type Transport = (typeof TRANSPORTS)[number];

export const SERVER_NAME_RE = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
/** An upstream MCP tool name as an admin writes it: any name a server may list (1–128 characters, no control characters). */
export const UPSTREAM_TOOL_MAX = 128;
/** An HTTP header field name (RFC 9110 token). */
export const HEADER_NAME_RE = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/;
export const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,99}$/;
/** Headers the MCP transport sets itself: a secret may not replace them. */
const RESERVED_HEADERS = new Set(["host", "content-type", "content-length", "accept", "mcp-session-id", "mcp-protocol-version", "connection", "transfer-encoding"]);
export const MAX_ARGS = 64;

/** A header the MCP transport sets itself (case-insensitive). */
export function isReservedHeader(name: string): boolean {
  return RESERVED_HEADERS.has(name.toLowerCase());
}

export type RuleCheck = { ok: true } | { ok: false; path: string; message: string };
const ok: RuleCheck = { ok: true };
const bad = (path: string, message: string): RuleCheck => ({ ok: false, path, message });

export function checkServerName(name: string): RuleCheck {
  if (SERVER_NAME_RE.test(name)) return ok;
  return bad("/name", `server name "${name}" must start with a letter and hold only letters, digits, _ and - (at most 64): it prefixes the governed tool names, as in github.create_issue`);
}

/**
 * An upstream tool name the admin names (allow-list, access override), exactly as the server
 * lists it (`get-sum`, `files.read`): svc maps it to the governed name itself (mcp-names.ts).
 */
export function checkToolName(tool: string, path: string): RuleCheck {
  if (tool.length >= 1 && tool.length <= UPSTREAM_TOOL_MAX && !/[\u0000-\u001f\u007f]/.test(tool)) return ok;
  return bad(path, `tool name "${tool.slice(0, 140)}" must be the name the MCP server lists: 1 to ${UPSTREAM_TOOL_MAX} characters, no control characters`);
}

/** The http endpoint, normalized, by the model endpoint rule (https, no credentials, query or fragment). */
export function checkServerUrl(raw: string): EndpointCheck {
  const check = checkEndpoint(raw);
  if (check.ok) return check;
  return {
    ...check,
    message: check.message
      .replace(/^endpoint/, "url")
      .replace("use auth_type api_key with a sealed key instead", "put credentials in sealed secret headers (--bearer or --secrets)")
      .replace("give the base URL only", "give the MCP endpoint URL only"),
  };
}

/** A stdio command: one program (a path or a name on the image's PATH), its arguments apart. */
export function checkCommand(command: string): RuleCheck {
  if (!command || command.length > 1024) return bad("/command", "command must be 1 to 1024 characters: the program installed in the image");
  if (/\s/.test(command)) return bad("/command", `command "${command}" holds whitespace; give the program alone and each argument in args`);
  if (/[\u0000-\u001f\u007f]/.test(command)) return bad("/command", "command holds control characters");
  return ok;
}

export function checkArgs(args: readonly string[]): RuleCheck {
  if (args.length > MAX_ARGS) return bad("/args", `at most ${MAX_ARGS} arguments`);
  const i = args.findIndex((a) => a.length > 4096 || a.includes("\u0000"));
  return i < 0 ? ok : bad(`/args/${i}`, "an argument must be at most 4096 characters, with no NUL");
}

/** The names of the sealed secrets: header names (http) or environment variables (stdio). */
export function checkSecretNames(transport: Transport, names: readonly string[]): RuleCheck {
  if (names.length === 0) return bad("/secret_names", "secret_names must list the header or variable names the sealed secrets hold");
  if (names.length > 32) return bad("/secret_names", "at most 32 secrets");
  // Header names are case-insensitive; environment variable names are not.
  const keys = transport === "http" ? names.map((n) => n.toLowerCase()) : names;
  if (new Set(keys).size !== names.length) return bad("/secret_names", "secret_names lists a name twice");
  for (const [i, n] of names.entries()) {
    if (transport === "http") {
      if (!HEADER_NAME_RE.test(n)) return bad(`/secret_names/${i}`, `"${n}" is not an HTTP header name (letters, digits and !#$%&'*+.^_\`|~-)`);
      if (RESERVED_HEADERS.has(n.toLowerCase())) return bad(`/secret_names/${i}`, `header "${n}" is set by the MCP transport itself and cannot be a secret`);
    } else if (!ENV_NAME_RE.test(n)) {
      return bad(`/secret_names/${i}`, `"${n}" is not an environment variable name (letters, digits and _, not starting with a digit)`);
    }
  }
  return ok;
}

/**
 * `NAME=value` lines (one secret per line, blank lines ignored) → {NAME: value}, as the CLI reads
 * them from stdin. The value is everything after the first "="; surrounding whitespace is trimmed
 * from the name only. Returns the first malformed line's number instead (never its text: it holds a secret).
 */
export function parseSecretLines(text: string): { ok: true; secrets: Record<string, string> } | { ok: false; message: string } {
  const secrets: Record<string, string> = {};
  const lines = text.split(/\r?\n/);
  for (const [i, line] of lines.entries()) {
    if (!line.trim()) continue;
    const eq = line.indexOf("=");
    const name = eq < 0 ? "" : line.slice(0, eq).trim();
    const value = eq < 0 ? "" : line.slice(eq + 1);
    if (!name || !value) return { ok: false, message: `stdin line ${i + 1} is not NAME=value (a name, "=", a non-empty value)` };
    if (name in secrets) return { ok: false, message: `stdin names "${name}" twice` };
    secrets[name] = value;
  }
  if (Object.keys(secrets).length === 0) return { ok: false, message: "stdin holds no NAME=value line" };
  return { ok: true, secrets };
}
