// The proxy's runtime API client (ARCHITECTURE.md "Runtime ↔ control plane"): each call made by
// src/runtime-link/request.ts (bearer runtime token, the egress proxy unless the host is in
// SVC_PROXY_NO_PROXY, the custom CA, no redirects, error bodies bounded), shared with the boot
// tool sync; here x-svc-replica after bootstrap, the proxy's errors and the answers checked.
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
import { redactUrlCredentials } from "../../contract/egress.ts";
import { viaEgress } from "../../runtime-link/egress.ts";
import { JsonText, type RuntimeLink, callRuntimeApi, installationDeleted, retryableStatus } from "../../runtime-link/request.ts";
import { SERVER_VERSION_HEADER } from "../../version.ts";
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
  return s === null || s < 400 || retryableStatus(s);
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
  if (installationDeleted(e.status, e.code)) return `the control plane refused the runtime token (401 on ${where}): ${e.detail ?? "its installation was deleted"}`;
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

/** A bundle, with its ETag and the version of the control plane that sent it (its `svc-version` header; absent before 0.2.0). */
export type BundleAnswer = { status: 304 } | { status: 200; bundle: PolicyBundle; etag: string | null; serverVersion: string | null };

export class ControlPlaneClient {
  replicaId: string | null = null;
  private readonly link: RuntimeLink;

  constructor(
    private readonly opts: ClientOptions,
    fetchImpl: typeof fetch = fetch,
  ) {
    this.link = { baseUrl: opts.baseUrl, token: opts.token, egress: { proxy: opts.egressProxy, noProxy: opts.noProxy }, ca: opts.ca, userAgent: `svc-proxy/${opts.version}`, fetch: fetchImpl };
  }

  private async call(what: RuntimeCall, method: string, path: string, body?: unknown, extraHeaders: Record<string, string> = {}): Promise<Response> {
    const headers = this.replicaId ? { ...extraHeaders, [REPLICA_HEADER]: this.replicaId } : extraHeaders;
    const r = await callRuntimeApi(this.link, { method, path, body, headers, timeoutMs: this.opts.timeoutMs ?? REQUEST_TIMEOUT_MS });
    if (r.ok) return r.res;
    const call = `${method} ${RUNTIME_API_PREFIX}${path}`;
    const f = r.failure;
    if (f.kind === "network") {
      // Errors are logged and shown by /readyz and `policy show`: never a proxy password.
      throw new ControlPlaneError(redactUrlCredentials(`control plane unreachable${viaEgress(r.proxy)} (${call}): ${(f.error as Error).message}`), null, null, what, null, f.error);
    }
    if (f.kind === "redirect") {
      throw new ControlPlaneError(
        redactUrlCredentials(
          `${call} answered ${f.status}, a redirect${f.location ? ` to ${f.location}` : ""}, not followed: the runtime token goes only to the configured control-plane URL (set it to where the control plane really is)`,
        ),
        f.status,
        null,
        what,
      );
    }
    // The body may come from the egress proxy (an error page naming URLs): redacted whole,
    // before it is shortened, so a cut never falls inside a URL's password and leaves it unrecognised.
    const code = typeof f.problem?.code === "string" ? f.problem.code : null;
    const problemDetail = typeof f.problem?.detail === "string" ? redactUrlCredentials(f.problem.detail).slice(0, 300) : null;
    const detail = problemDetail ?? redactUrlCredentials(f.text).slice(0, 300);
    throw new ControlPlaneError(redactUrlCredentials(`${call} answered ${f.status}${code ? ` ${code}` : ""}${detail ? `: ${detail}` : ""}`), f.status, code, what, problemDetail);
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
