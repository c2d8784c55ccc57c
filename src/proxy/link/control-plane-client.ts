// The runtime API client (ARCHITECTURE.md "Runtime ↔ control plane"): bearer runtime token,
// x-svc-replica after bootstrap, the egress proxy for control-plane calls only (unless the
// host is in SVC_PROXY_NO_PROXY), a custom CA trusted alongside the system roots.
import { AssertionKeyMaterial } from "../../contract/identity-assertion.ts";
import type { BundleVersion, PolicyBundle } from "../../contract/bundle.ts";
import {
  AuditBatchResponse,
  type BootstrapRequest,
  BootstrapResponse,
  type BudgetLeaseRequest,
  BudgetLeaseResponse,
  type ClaimRequest,
  ClaimResponse,
  DigestKeyMaterial,
  type HeartbeatRequest,
  REPLICA_HEADER,
  RUNTIME_API_PREFIX,
  LimitsResponse,
  type McpToolsReport,
  McpToolsResult,
  type ToolServerTokenRequest,
  ToolServerTokenResponse,
} from "../../contract/runtime-api.ts";
import { PolicyBundle as PolicyBundleSchema } from "../../contract/bundle.ts";
import { egressProxyFor, redactUrlCredentials } from "../../contract/egress.ts";
import { SERVER_VERSION_HEADER } from "../../version.ts";
import { readErrorBody } from "../error-body.ts";
import { firstProblem } from "../schema-check.ts";

export const REQUEST_TIMEOUT_MS = 10_000;

/** The runtime API calls, as named in errors and in the credential check below. */
export type RuntimeCall = "bootstrap" | "policy-bundle" | "digest-key" | "assertion-key" | "heartbeat" | "audit-records" | "claims" | "limits" | "budget-leases" | "mcp-tools" | "tool-server-token";

/** A failed control-plane call: status null for a network error (unreachable, timeout, TLS). */
export class ControlPlaneError extends Error {
  override name = "ControlPlaneError";
  constructor(
    message: string,
    readonly status: number | null,
    readonly code: string | null = null,
    readonly call: RuntimeCall | null = null,
    /** The problem's `detail` as the control plane sent it (redacted), when its answer was one. */
    readonly detail: string | null = null,
    /** A network error: what fetch threw. */
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
  }
}

/**
 * A failure worth retrying on the last good bundle: the control plane was not reached or could
 * not answer (network error, 5xx, 408, 429), or its 2xx answer was unreadable (an intermediary).
 */
export function isTransient(e: unknown): boolean {
  if (!(e instanceof ControlPlaneError)) return true;
  const s = e.status;
  return s === null || s < 400 || s >= 500 || s === 408 || s === 429;
}

/**
 * When the control plane refused the runtime credential itself, why (one line for operators);
 * null otherwise. 401/403 from any runtime call: the token is wrong, rotated or revoked. 404
 * from bootstrap or the policy bundle: the installation was deleted (or the URL is wrong).
 * The proxy then forgets everything bound to the token and refuses every decision.
 */
export function credentialRefusal(e: unknown): string | null {
  if (!(e instanceof ControlPlaneError) || e.status === null) return null;
  const where = e.call ?? "a runtime call";
  if (e.status === 401 && e.code === "installation_deleted") return `the control plane refused the runtime token (401 on ${where}): ${e.detail ?? "its installation was deleted"}`;
  if (e.status === 401) return `the control plane refused the runtime token (401 on ${where}): SVC_RUNTIME_TOKEN is wrong or was rotated`;
  if (e.status === 403) return `the control plane refused the runtime token (403 on ${where}): the token is not allowed to act for this installation`;
  if (e.status === 404 && (e.call === "bootstrap" || e.call === "policy-bundle")) {
    return `the control plane does not know this installation (404 on ${where}): the installation was deleted, or SVC_RUNTIME_CONTROL_PLANE_URL points at the wrong service`;
  }
  return null;
}

export type ClientOptions = {
  baseUrl: string;
  token: string;
  version: string;
  egressProxy: string | null;
  noProxy: string[];
  /** PEM CA certificates to trust in addition to the system roots. */
  ca: string[] | null;
  timeoutMs?: number;
};

/** A request body that is JSON text already: sent as is, never serialized again. */
export class JsonText {
  constructor(readonly text: string) {}
}

/** A bundle, with its ETag and the version of the control plane that sent it (its `svc-version` header; absent before 0.2.0). */
export type BundleAnswer = { status: 304 } | { status: 200; bundle: PolicyBundle; etag: string | null; serverVersion: string | null };

export class ControlPlaneClient {
  replicaId: string | null = null;

  constructor(
    private readonly opts: ClientOptions,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  private async call(what: RuntimeCall, method: string, path: string, body?: unknown, extraHeaders: Record<string, string> = {}): Promise<Response> {
    const url = `${this.opts.baseUrl}${RUNTIME_API_PREFIX}${path}`;
    const headers: Record<string, string> = { authorization: `Bearer ${this.opts.token}`, accept: "application/json", "user-agent": `svc-proxy/${this.opts.version}`, ...extraHeaders };
    if (this.replicaId) headers[REPLICA_HEADER] = this.replicaId;
    if (body !== undefined) headers["content-type"] = "application/json";
    const init: RequestInit & { proxy?: string; tls?: { ca?: string[] } } = {
      method,
      headers,
      body: body === undefined ? undefined : body instanceof JsonText ? body.text : JSON.stringify(body),
      signal: AbortSignal.timeout(this.opts.timeoutMs ?? REQUEST_TIMEOUT_MS),
      // Never followed (the runtime token goes to the configured URL only); a redirect is named below.
      redirect: "manual",
    };
    const proxy = egressProxyFor(url, this.opts.egressProxy, this.opts.noProxy);
    if (proxy) init.proxy = proxy;
    if (this.opts.ca) init.tls = { ca: this.opts.ca };
    let res: Response;
    try {
      res = await this.fetchImpl(url, init);
    } catch (e) {
      // Errors are logged and shown by /readyz and `policy show`: never a proxy password.
      const via = proxy ? ` through the egress proxy ${redactUrlCredentials(proxy)}` : "";
      throw new ControlPlaneError(redactUrlCredentials(`control plane unreachable${via} (${method} ${RUNTIME_API_PREFIX}${path}): ${(e as Error).message}`), null, null, what, null, e);
    }
    if (res.status >= 300 && res.status < 400 && res.status !== 304) {
      await res.body?.cancel();
      const to = res.headers.get("location");
      throw new ControlPlaneError(
        redactUrlCredentials(
          `${method} ${RUNTIME_API_PREFIX}${path} answered ${res.status}, a redirect${to ? ` to ${to}` : ""}, not followed: the runtime token goes only to the configured control-plane URL (set it to where the control plane really is)`,
        ),
        res.status,
        null,
        what,
      );
    }
    if (res.status >= 400) {
      // Read up to ERROR_BODY_LIMIT. The body may come from the egress proxy as well (an error
      // page naming URLs): redacted whole, before it is shortened, so a cut never falls inside
      // a URL's password and leaves it unrecognised.
      const { text, cut } = await readErrorBody(res);
      let code: string | null = null;
      let problemDetail: string | null = null;
      try {
        const j = cut ? null : (JSON.parse(text) as { code?: unknown; detail?: unknown } | null);
        if (typeof j?.code === "string") code = j.code;
        if (typeof j?.detail === "string") problemDetail = redactUrlCredentials(j.detail).slice(0, 300);
      } catch {}
      const detail = problemDetail ?? redactUrlCredentials(text).slice(0, 300);
      throw new ControlPlaneError(
        redactUrlCredentials(`${method} ${RUNTIME_API_PREFIX}${path} answered ${res.status}${code ? ` ${code}` : ""}${detail ? `: ${detail}` : ""}`),
        res.status,
        code,
        what,
        problemDetail,
      );
    }
    return res;
  }

  private async json<T>(res: Response, schema: Parameters<typeof firstProblem>[0], what: string, call: RuntimeCall): Promise<T> {
    let value: unknown;
    try {
      value = await res.json();
    } catch {
      throw new ControlPlaneError(`${what}: the answer is not JSON`, res.status, null, call);
    }
    const problem = firstProblem(schema, value);
    if (problem) throw new ControlPlaneError(`${what}: unexpected answer (${problem})`, res.status, null, call);
    return value as T;
  }

  async bootstrap(req: BootstrapRequest): Promise<BootstrapResponse> {
    return this.json(await this.call("bootstrap", "POST", "/bootstrap", req), BootstrapResponse, "bootstrap", "bootstrap");
  }

  async fetchBundle(version: BundleVersion, etag: string | null): Promise<BundleAnswer> {
    const res = await this.call("policy-bundle", "GET", `/policy-bundle?version=${version}&conditions=1`, undefined, etag ? { "if-none-match": etag } : {});
    if (res.status === 304) return { status: 304 };
    const bundle = await this.json<PolicyBundle>(res, PolicyBundleSchema, "policy bundle", "policy-bundle");
    return { status: 200, bundle, etag: res.headers.get("etag"), serverVersion: res.headers.get(SERVER_VERSION_HEADER) };
  }

  /** The organization's identity-assertion key, sealed to this replica: fetched when the bundle names another (issue 32). */
  async assertionKey(): Promise<AssertionKeyMaterial> {
    return this.json(await this.call("assertion-key", "GET", "/assertion-key"), AssertionKeyMaterial, "assertion key", "assertion-key");
  }

  /** The organization's current digest key: fetched when the bundle names another (a rotation). */
  async digestKey(): Promise<DigestKeyMaterial> {
    return this.json(await this.call("digest-key", "GET", "/digest-key"), DigestKeyMaterial, "digest key", "digest-key");
  }

  async heartbeat(req: HeartbeatRequest): Promise<void> {
    const res = await this.call("heartbeat", "POST", "/heartbeat", req);
    await res.body?.cancel();
  }

  /**
   * Ship records given as their spooled lines, each one record's JSON text: the body is
   * `{"records":[` + the lines joined with `,` + `]}`, the same bytes the proxy spooled, built
   * without parsing or serializing any record (the control plane hashes the chain form it
   * derives from each record, never the text, so its key order is free).
   */
  async shipAudit(lines: readonly string[]): Promise<AuditBatchResponse> {
    const body = new JsonText(`{"records":[${lines.join(",")}]}`);
    return this.json(await this.call("audit-records", "POST", "/audit-records", body), AuditBatchResponse, "audit records", "audit-records");
  }

  /** The budgets this runtime enforces, with their spend (issue 16). */
  async limits(): Promise<LimitsResponse> {
    return this.json(await this.call("limits", "GET", "/limits"), LimitsResponse, "limits", "limits");
  }

  /** Settle finished budget leases and take new ones (docs/proxy.md "Budgets"). */
  async budgetLeases(req: BudgetLeaseRequest): Promise<BudgetLeaseResponse> {
    return this.json(await this.call("budget-leases", "POST", "/budget-leases", req), BudgetLeaseResponse, "budget leases", "budget-leases");
  }

  /** What this replica's MCP servers listed (issue 31). */
  async reportMcpTools(req: McpToolsReport): Promise<McpToolsResult> {
    return this.json(await this.call("mcp-tools", "PUT", "/mcp-tools", req), McpToolsResult, "mcp tools", "mcp-tools");
  }

  async createClaim(req: ClaimRequest): Promise<ClaimResponse> {
    return this.json(await this.call("claims", "POST", "/claims", req), ClaimResponse, "claim", "claims");
  }

  /** A user's access token for an OAuth tool server, sealed to this replica, or that user's consent link (issue 32). */
  async toolServerToken(req: ToolServerTokenRequest): Promise<ToolServerTokenResponse> {
    return this.json(await this.call("tool-server-token", "POST", "/tool-server-token", req), ToolServerTokenResponse, "tool server token", "tool-server-token");
  }
}
