// The admin CLI's one HTTP client for the control plane's API (docs/api.md). Every refusal the
// control plane gives as problem+json becomes an ApiError — a CommandFailure whose message is
// one sentence naming the command, saying what to do next, and ending with the stable `code`.
import { CommandFailure, EXIT_FAILURE } from "../command/index.ts";
import { type CliEnv, type Credentials, readCliEnv, resolveCredentials } from "./config.ts";

export const API_PREFIX = "/api/v1";
const REQUEST_TIMEOUT_MS = 30_000;

/** A control-plane refusal: `code` is the problem's stable code, `status` the HTTP status. */
export class ApiError extends CommandFailure {
  override name = "ApiError";
  constructor(
    message: string,
    readonly code: string,
    readonly status: number,
  ) {
    super(message, EXIT_FAILURE);
  }
}

/** What to do next, for codes whose detail may not say it. */
const NEXT_STEP: Record<string, string> = {
  unauthorized: "sign in again with `svc login`",
  forbidden: "ask an organization owner or admin to run it",
};

/** One sentence: "<command>: <detail>; <next step> (<code>)". Pure, for tests. */
export function problemMessage(label: string, problem: { code?: unknown; detail?: unknown; title?: unknown }, status: number, route: string): string {
  const code = typeof problem.code === "string" && problem.code ? problem.code : `http_${status}`;
  let detail = typeof problem.detail === "string" && problem.detail ? problem.detail : typeof problem.title === "string" ? problem.title : `HTTP ${status}`;
  detail = detail.replace(/[.\s]+$/, "");
  let next = NEXT_STEP[code];
  if (code === "not_found" && detail.startsWith("no route")) next = `the control plane at this URL does not serve ${route}; check the URL or upgrade the control plane`;
  return `${label}: ${detail}${next && !detail.includes(next) ? `; ${next}` : ""} (${code})`;
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
  ) {}

  /** A failure of this command that is not from the control plane: one sentence, with a code when one applies. */
  fail(message: string, code?: string, exitCode = EXIT_FAILURE): CommandFailure {
    return new CommandFailure(`${this.label}: ${message}${code ? ` (${code})` : ""}`, exitCode);
  }

  private async send(method: string, path: string, opts: RequestOptions, accept: string): Promise<Response> {
    const route = `${API_PREFIX}${path}`;
    const headers: Record<string, string> = { accept };
    if (opts.auth !== false && this.token) headers.authorization = `Bearer ${this.token}`;
    if (opts.body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    try {
      res = await fetch(`${this.baseUrl}${route}${buildQuery(opts.query)}`, {
        method,
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        redirect: "manual",
      });
    } catch (e) {
      const why = (e as Error)?.name === "TimeoutError" ? "timed out" : (e as Error)?.message ?? String(e);
      throw new ApiError(`${this.label}: cannot reach the control plane at ${this.baseUrl} (${why}); check the URL given to \`svc login\` and the network (unreachable)`, "unreachable", 0);
    }
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
    const message = problemMessage(this.label, problem, res.status, `${method} ${route}`);
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

  /** A binary GET (e.g. an audit record's age ciphertext). */
  async bytes(path: string, opts: RequestOptions = {}): Promise<Uint8Array> {
    const res = await this.send("GET", path, opts, "application/octet-stream");
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
  ) {
    super(baseUrl, token, label);
  }
  /** "/agents" → "/organizations/org_…/agents" */
  org(path: string): string {
    return `/organizations/${encodeURIComponent(this.orgId)}${path}`;
  }
}

/** GET /me: who the token belongs to. */
export type Me = { account: { id: string; email: string }; organization: { id: string; name: string }; role: string };

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
    const me = await new AdminClient(creds.url, creds.token, label).json<Me>("GET", "/me");
    orgId = me?.organization?.id;
    if (!orgId) throw new CommandFailure(`${label}: GET /api/v1/me did not name an organization; check SVC_TOKEN`);
  }
  return new OrgClient(creds.url, creds.token, label, orgId);
}

/** `encodeURIComponent` for one path segment (ids, names, emails). */
export function seg(s: string): string {
  return encodeURIComponent(s);
}
