// The runtime API client (ARCHITECTURE.md "Runtime ↔ control plane"): bearer runtime token,
// x-svc-replica after bootstrap, the egress proxy for control-plane calls only (unless the
// host is in SVC_PROXY_NO_PROXY), a custom CA trusted alongside the system roots.
import type { AuditRecord } from "../contract/audit.ts";
import type { BundleVersion, PolicyBundle } from "../contract/bundle.ts";
import {
  AuditBatchResponse,
  type BootstrapRequest,
  BootstrapResponse,
  type ClaimRequest,
  ClaimResponse,
  type HeartbeatRequest,
  REPLICA_HEADER,
  RUNTIME_API_PREFIX,
} from "../contract/runtime-api.ts";
import { PolicyBundle as PolicyBundleSchema } from "../contract/bundle.ts";
import { bypassesProxy } from "./config.ts";
import { firstProblem } from "./schema-check.ts";

export const REQUEST_TIMEOUT_MS = 10_000;

/** A failed control-plane call: status null for a network error (unreachable, timeout, TLS). */
export class ControlPlaneError extends Error {
  override name = "ControlPlaneError";
  constructor(
    message: string,
    readonly status: number | null,
    readonly code: string | null = null,
  ) {
    super(message);
  }
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

export type BundleAnswer = { status: 304 } | { status: 200; bundle: PolicyBundle; etag: string | null };

export class ControlPlaneClient {
  replicaId: string | null = null;

  constructor(
    private readonly opts: ClientOptions,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  private async call(method: string, path: string, body?: unknown, extraHeaders: Record<string, string> = {}): Promise<Response> {
    const url = `${this.opts.baseUrl}${RUNTIME_API_PREFIX}${path}`;
    const headers: Record<string, string> = { authorization: `Bearer ${this.opts.token}`, accept: "application/json", "user-agent": `svc-proxy/${this.opts.version}`, ...extraHeaders };
    if (this.replicaId) headers[REPLICA_HEADER] = this.replicaId;
    if (body !== undefined) headers["content-type"] = "application/json";
    const init: RequestInit & { proxy?: string; tls?: { ca?: string[] } } = {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(this.opts.timeoutMs ?? REQUEST_TIMEOUT_MS),
      redirect: "error",
    };
    if (this.opts.egressProxy && !bypassesProxy(url, this.opts.noProxy)) init.proxy = this.opts.egressProxy;
    if (this.opts.ca) init.tls = { ca: this.opts.ca };
    let res: Response;
    try {
      res = await this.fetchImpl(url, init);
    } catch (e) {
      throw new ControlPlaneError(`control plane unreachable (${method} ${RUNTIME_API_PREFIX}${path}): ${(e as Error).message}`, null);
    }
    if (res.status >= 400) {
      const text = await res.text().catch(() => "");
      let code: string | null = null;
      let detail = text.slice(0, 300);
      try {
        const j = JSON.parse(text) as { code?: string; detail?: string };
        code = j.code ?? null;
        detail = j.detail ?? detail;
      } catch {}
      throw new ControlPlaneError(`${method} ${RUNTIME_API_PREFIX}${path} answered ${res.status}${code ? ` ${code}` : ""}${detail ? `: ${detail}` : ""}`, res.status, code);
    }
    return res;
  }

  private async json<T>(res: Response, schema: Parameters<typeof firstProblem>[0], what: string): Promise<T> {
    let value: unknown;
    try {
      value = await res.json();
    } catch {
      throw new ControlPlaneError(`${what}: the answer is not JSON`, res.status);
    }
    const problem = firstProblem(schema, value);
    if (problem) throw new ControlPlaneError(`${what}: unexpected answer (${problem})`, res.status);
    return value as T;
  }

  async bootstrap(req: BootstrapRequest): Promise<BootstrapResponse> {
    return this.json(await this.call("POST", "/bootstrap", req), BootstrapResponse, "bootstrap");
  }

  async fetchBundle(version: BundleVersion, etag: string | null): Promise<BundleAnswer> {
    const res = await this.call("GET", `/policy-bundle?version=${version}`, undefined, etag ? { "if-none-match": etag } : {});
    if (res.status === 304) return { status: 304 };
    const bundle = await this.json<PolicyBundle>(res, PolicyBundleSchema, "policy bundle");
    return { status: 200, bundle, etag: res.headers.get("etag") };
  }

  async heartbeat(req: HeartbeatRequest): Promise<void> {
    const res = await this.call("POST", "/heartbeat", req);
    await res.body?.cancel();
  }

  async shipAudit(records: AuditRecord[]): Promise<AuditBatchResponse> {
    return this.json(await this.call("POST", "/audit-records", { records }), AuditBatchResponse, "audit records");
  }

  async createClaim(req: ClaimRequest): Promise<ClaimResponse> {
    return this.json(await this.call("POST", "/claims", req), ClaimResponse, "claim");
  }
}
