// The admin CLI's one HTTP client for the control plane's API (docs/api.md). Every refusal the
// control plane gives as problem+json becomes an ApiError — a CommandFailure whose message is
// one sentence naming the command, saying what to do next, and ending with the stable `code`.
import type { Me } from "../../contract/admin-api.ts";
import { CommandFailure, EXIT_FAILURE } from "../../command/index.ts";
import { type CliEnv, type Credentials, readCliEnv, resolveCredentials } from "./config.ts";
import { BUILD_VERSION, SERVER_VERSION_HEADER } from "../../version.ts";

export const API_PREFIX = "/api/v1";
const REQUEST_TIMEOUT_MS = 30_000;

/** A control-plane refusal: `code` is the problem's stable code, `status` the HTTP status. */
export class ApiError extends CommandFailure {
  override name = "ApiError";
  constructor(
    message: string,
    override readonly code: string,
    override readonly status: number,
  ) {
    super(message, EXIT_FAILURE, code, status);
  }
}

/** Where the token of a call came from; decides what a 401 tells the admin to do. */
export type TokenSource = "file" | "env" | "login" | "none";

/** Why a refused token was refused and what to do, by where it came from. */
const UNAUTHORIZED: Record<TokenSource, string> = {
  file: "your sign-in has expired or was revoked; run `svc login` to sign in again",
  env: "the control plane refused SVC_TOKEN (expired, revoked or wrong); set SVC_TOKEN to a valid API token, or unset SVC_TOKEN and SVC_CONTROL_PLANE_URL and run `svc login`",
  login: "the control plane refused the token (expired, revoked or wrong); pipe a valid API token, or run `svc login` without --with-token to approve in a browser",
  none: "the control plane wants a sign-in for this; run `svc login`",
};

const URL_SOURCE: Record<TokenSource, string> = {
  file: "the URL given to `svc login`",
  env: "SVC_CONTROL_PLANE_URL",
  login: "--url",
  none: "the URL given to `svc login`",
};

const NEEDS_ADMIN = "admin commands need the owner or admin role in the organization: ask an owner or admin to run it or to make your account an admin, then run `svc login` again";
const RETRY = "run it again in a moment, and check the control plane's log if it keeps failing";

/** What to do next, by code, when the control plane's detail does not say it. */
const NEXT_STEP: Record<string, string> = {
  workspace_not_found: "check --workspace: pass a workspace id (ws_…) or name, such as default",
  agent_not_found: "check the agent id (agt_…); agents are created and listed in the console",
  conflict: "use the existing one, or choose another name",
  internal: RETRY,
  store_unavailable: RETRY,
  outbound_url_refused: "pass a public https URL",
  invalid_platform: "use --platform chatui",
  invalid_pattern: "fix --src-pattern or --dst-pattern and run it again",
  invalid_condition: "fix --condition at the line and column named and run it again",
  condition_too_costly: "make the condition cheaper where it costs most (a loop inside a loop over the arguments, say) and run it again",
  unregistered_tool: "register the tool first (a pack or tool server of an installation in the workspace), fix the name, or drop --strict",
  invalid_recipient: "pass an age X25519 public key (age1…)",
};

/** Where to look up the right id, by command group, for a not_found. */
const LOOKUP: [string, string][] = [
  ["svc bot", "list installations with `svc bot list`"],
  ["svc model-profiles", "list profiles with `svc model-profiles list --workspace <workspace>`"],
  ["svc tool-servers", "list servers with `svc tool-servers list --workspace <workspace>`"],
  ["svc policies", "list policies with `svc policies list --workspace <workspace>`"],
  ["svc users", "find the user with `svc users resolve --email <email>`"],
  ["svc audit keys", "list keys with `svc audit keys list`"],
  ["svc audit sinks", "list sinks with `svc audit sinks list`"],
  ["svc audit decrypt", "copy the record id from the console's audit view"],
];

/** Request fields whose flag is spelled otherwise; null where no flag sets the field (stdin, or made by the CLI). */
const FIELD_FLAGS: Record<string, string | null> = {
  src: "src-pattern",
  dst: "dst-pattern",
  interval_seconds: "interval",
  client_secret: null,
  secret: "secret-stdin",
  ca_pem: "ca-file",
  api_key_sealed: null,
  sealed_to: null,
  public_key: null,
  secrets_sealed: null,
  secret_names: null,
  allowed_tools: "allow",
  access_overrides: "access",
};

/** The flag that set a request field, e.g. "/display_name" → "--display-name"; null when none did. Pure. */
export function flagOfField(label: string, path: unknown): string | null {
  if (typeof path !== "string" || !/^\/[a-z_]+$/.test(path)) return null;
  const field = path.slice(1);
  // `svc policies` spells the agent --agent-id as the spec does; the other commands --agent.
  if (field === "agent_id") return label.startsWith("svc policies") ? "--agent-id" : "--agent";
  const flag = field in FIELD_FLAGS ? FIELD_FLAGS[field] : field.replace(/_/g, "-");
  return flag ? `--${flag}` : null;
}

function nextStep(label: string, code: string, status: number, problem: { retry_after_seconds?: unknown; errors?: unknown }, source: TokenSource): string {
  if (NEXT_STEP[code]) return NEXT_STEP[code]!;
  if (code === "not_found") {
    const lookup = LOOKUP.find(([prefix]) => label.startsWith(prefix))?.[1];
    return `check the id or name you passed${lookup ? ` (${lookup})` : ""}`;
  }
  if (code === "rate_limited" || status === 429) {
    const wait = typeof problem.retry_after_seconds === "number" ? `${Math.ceil(problem.retry_after_seconds)} seconds` : "a minute";
    return `wait ${wait} and run it again`;
  }
  if (code === "validation_failed" || status === 422 || status === 400) {
    const path = Array.isArray(problem.errors) ? (problem.errors[0] as { path?: unknown } | undefined)?.path : undefined;
    const flag = flagOfField(label, path);
    return flag ? `fix ${flag} and run it again` : "fix the value and run it again";
  }
  if (status >= 500 || status === 0) return RETRY;
  if (code.startsWith("http_")) return `check that ${URL_SOURCE[source]} points at the svc control plane`;
  return `check the command with \`${label} --help\` and run it again`;
}

/**
 * One sentence: "<command>: <detail>; <next step> (<code>)". A refused token (401) and a missing
 * role (403) get the CLI's own next step, which depends on where the token came from; other
 * details keep the control plane's own next step when they have one ("…; run …"). Pure.
 */
export function problemMessage(
  label: string,
  problem: { code?: unknown; detail?: unknown; title?: unknown; retry_after_seconds?: unknown; errors?: unknown },
  status: number,
  route: string,
  source: TokenSource = "file",
): string {
  const code = typeof problem.code === "string" && problem.code ? problem.code : `http_${status}`;
  let detail = typeof problem.detail === "string" && problem.detail ? problem.detail : typeof problem.title === "string" ? problem.title : `HTTP ${status}`;
  detail = detail.replace(/[.\s]+$/, "");
  if (code === "unauthorized" || status === 401) return `${label}: ${UNAUTHORIZED[source]} (${code})`;
  // A 403 with a code of its own (escrow recovery's rules) says itself what would satisfy it.
  if (code === "forbidden" || code === "http_403") return `${label}: ${detail.split("; ")[0]}; ${NEEDS_ADMIN} (${code})`;
  let next: string | null = null;
  if (code === "not_found" && detail.startsWith("no route")) next = `the control plane at this URL does not serve ${route}; check the URL or upgrade the control plane`;
  else if (!detail.includes("; ")) next = nextStep(label, code, status, problem, source);
  return `${label}: ${detail}${next ? `; ${next}` : ""} (${code})`;
}

export type Query = Record<string, string | number | boolean | undefined | null>;
export type RequestOptions = { body?: unknown; query?: Query; auth?: boolean };

export function buildQuery(query: Query | undefined): string {
  if (!query) return "";
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== "") params.set(k, String(v));
  const s = params.toString();
  return s ? `?${s}` : "";
}

export class AdminClient {
  constructor(
    readonly baseUrl: string,
    readonly token: string | null,
    /** The command, e.g. "svc bot init": every error message starts with it. */
    readonly label: string,
    /** Where `token` came from, so a 401 says what to fix. */
    readonly tokenSource: TokenSource = token ? "file" : "none",
  ) {}

  /** The release of the control plane as its last answer named it (`svc-version`); null before any answer, or from a release before 0.2.0. */
  serverVersion: string | null = null;

  /** A failure of this command that is not from the control plane: one sentence, with a code when one applies. */
  fail(message: string, code?: string, exitCode = EXIT_FAILURE): CommandFailure {
    return new CommandFailure(`${this.label}: ${message}${code ? ` (${code})` : ""}`, exitCode, code);
  }

  private async send(method: string, path: string, opts: RequestOptions, accept: string, timeoutMs: number | null = REQUEST_TIMEOUT_MS): Promise<Response> {
    const route = `${API_PREFIX}${path}`;
    const headers: Record<string, string> = { accept, "user-agent": `svc-cli/${BUILD_VERSION}` };
    if (opts.auth !== false && this.token) headers.authorization = `Bearer ${this.token}`;
    if (opts.body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}${route}${buildQuery(opts.query)}`, {
        method,
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        ...(timeoutMs === null ? {} : { signal: AbortSignal.timeout(timeoutMs) }),
        redirect: "manual",
      });
    } catch (e) {
      const why = (e as Error)?.name === "TimeoutError" ? "timed out" : ((e as Error)?.message ?? String(e));
      throw new ApiError(
        `${this.label}: cannot reach the control plane at ${this.baseUrl} (${why}); check ${URL_SOURCE[this.tokenSource]} and the network, then run it again (unreachable)`,
        "unreachable",
        0,
      );
    }
    this.serverVersion = res.headers.get(SERVER_VERSION_HEADER);
    if (res.ok) return res;
    const text = await res.text();
    let problem: Record<string, unknown> = {};
    try {
      const parsed = JSON.parse(text);
      if (parsed && typeof parsed === "object") problem = parsed as Record<string, unknown>;
    } catch {}
    if (!("code" in problem) && !("detail" in problem)) {
      problem = { detail: `the control plane answered HTTP ${res.status} to ${method} ${route}` };
    }
    const message = problemMessage(this.label, problem, res.status, `${method} ${route}`, this.tokenSource);
    throw new ApiError(message, typeof problem.code === "string" ? problem.code : `http_${res.status}`, res.status);
  }

  /** A JSON call; resolves to the parsed body (null for 204). */
  async json<T = any>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const res = await this.send(method, path, opts, "application/json");
    const text = await res.text();
    if (!text) return null as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw this.fail(`the control plane sent a body that is not JSON for ${method} ${API_PREFIX}${path}; check that the URL points at the svc control plane`);
    }
  }

  /**
   * A streamed GET (e.g. an audit export): the body as it arrives, for the caller to write as
   * it reads. No overall timeout: a million-record export may take minutes.
   */
  async stream(path: string, opts: RequestOptions = {}, accept = "*/*"): Promise<ReadableStream<Uint8Array>> {
    const res = await this.send("GET", path, opts, accept, null);
    if (!res.body) throw this.fail(`the control plane sent no body for GET ${API_PREFIX}${path}`);
    return res.body;
  }

  /**
   * Pages through a cursor-paged list (`{<key>: T[], next_cursor}`) the way gh's `--limit`
   * does: as many requests of at most `pageSize` as it takes to hold `limit` items (0: all of
   * them), each continuing at the last one's cursor. `next_cursor` is where a later call would
   * go on (null when the list ended).
   */
  async collect<T>(path: string, key: string, opts: { limit: number; pageSize: number; query?: Query; cursor?: string | null }): Promise<{ items: T[]; next_cursor: string | null }> {
    const items: T[] = [];
    let cursor = opts.cursor ?? null;
    for (;;) {
      const want = opts.limit === 0 ? opts.pageSize : Math.min(opts.pageSize, opts.limit - items.length);
      const page = await this.json<Record<string, unknown>>("GET", path, { query: { ...opts.query, limit: want, ...(cursor ? { cursor } : {}) } });
      const got = page?.[key];
      if (!Array.isArray(got)) throw this.fail(`the control plane's answer to GET ${API_PREFIX}${path} has no "${key}" list; check that the URL points at the svc control plane`);
      items.push(...(got as T[]));
      cursor = typeof page?.next_cursor === "string" && page.next_cursor ? page.next_cursor : null;
      if (cursor === null || (opts.limit !== 0 && items.length >= opts.limit)) return { items, next_cursor: cursor };
    }
  }

  /** A binary answer (e.g. an audit record's age ciphertext; POST for an escrow recovery's one fetch). */
  async bytes(path: string, opts: RequestOptions = {}, method: "GET" | "POST" = "GET"): Promise<Uint8Array> {
    const res = await this.send(method, path, opts, "application/octet-stream");
    return new Uint8Array(await res.arrayBuffer());
  }
}

/** An AdminClient bound to the signed-in organization. */
export class OrgClient extends AdminClient {
  constructor(
    baseUrl: string,
    token: string,
    label: string,
    readonly orgId: string,
    tokenSource: TokenSource = "file",
  ) {
    super(baseUrl, token, label, tokenSource);
  }
  /** "/agents" → "/organizations/org_…/agents" */
  org(path: string): string {
    return `/organizations/${encodeURIComponent(this.orgId)}${path}`;
  }
}

/** GET /me: who the token belongs to. */
export type { Me } from "../../contract/admin-api.ts";

/**
 * The client every admin command uses: credentials from the environment or the config file;
 * with environment credentials the organization comes from GET /me.
 */
export async function connect(label: string, env: CliEnv = readCliEnv()): Promise<OrgClient> {
  let creds: Credentials;
  try {
    creds = resolveCredentials(env);
  } catch (e) {
    if (e instanceof CommandFailure) throw new CommandFailure(`${label}: ${e.message}`, e.exitCode);
    throw e;
  }
  let orgId = creds.organizationId;
  if (!orgId) {
    const me = await new AdminClient(creds.url, creds.token, label, creds.source).json<Me>("GET", "/me");
    orgId = me?.organization?.id;
    if (!orgId) throw new CommandFailure(`${label}: GET /api/v1/me did not name an organization; check that SVC_CONTROL_PLANE_URL points at the svc control plane`);
  }
  return new OrgClient(creds.url, creds.token, label, orgId, creds.source);
}

/** `encodeURIComponent` for one path segment (ids, names, emails). */
export function seg(s: string): string {
  return encodeURIComponent(s);
}
