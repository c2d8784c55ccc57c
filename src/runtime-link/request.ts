// One call to the runtime API (ARCHITECTURE.md "Runtime ↔ control plane"), made the one way
// both of its callers need: the proxy daemon's client (src/proxy/link/control-plane-client.ts)
// and the boot tool sync (src/boot/sync.ts). {base}/api/v1/runtime/<path> with the runtime
// token as bearer; through the egress proxy unless the host is in SVC_PROXY_NO_PROXY; a custom
// CA trusted beside the system roots; a redirect never followed (the runtime token goes to the
// configured URL only); an error answer read up to ERROR_BODY_LIMIT for its problem+json.
// It never throws: a failure is a value, which each caller words in its own terms (the
// proxy's errors, the tool sync's spec texts) and retries on its own schedule.
import { readErrorBody } from "../contract/error-body.ts";
import { RUNTIME_API_PREFIX } from "../contract/runtime-api.ts";
import { type Egress, proxyFor } from "./egress.ts";

/** Where and as whom the runtime calls the control plane. */
export type RuntimeLink = {
  /** SVC_RUNTIME_CONTROL_PLANE_URL: the base URL, no /api/v1 suffix (trailing slashes ignored). */
  baseUrl: string;
  /** SVC_RUNTIME_TOKEN, sent as the bearer credential. */
  token: string;
  egress: Egress;
  /** PEM CA certificates to trust in addition to the system roots. */
  ca?: string[] | null;
  userAgent?: string;
  /** Injected by tests; the real fetch by default. */
  fetch?: typeof fetch;
};

/** A request body that is JSON text already: sent as is, never serialized again. */
export class JsonText {
  constructor(readonly text: string) {}
}

export type RuntimeRequest = {
  method: string;
  /** The path under /api/v1/runtime, e.g. "/tools" (a query string may follow). */
  path: string;
  /** Serialized as JSON (a JsonText as is); none when undefined. */
  body?: unknown;
  headers?: Record<string, string>;
  timeoutMs: number;
};

/** An error answer's body when it was a JSON object (the control plane's problem+json), else null. */
export type ProblemBody = { code?: unknown; detail?: unknown; title?: unknown; [member: string]: unknown };

export type RuntimeFailure =
  /** fetch threw: unreachable, refused, TLS, or no answer in time (a TimeoutError). */
  | { kind: "network"; error: unknown }
  /** A 3xx other than 304, not followed. */
  | { kind: "redirect"; status: number; location: string | null }
  /** 4xx or 5xx: the problem (null when the body was not a JSON object or was cut), and the body read up to the limit. */
  | { kind: "status"; status: number; problem: ProblemBody | null; text: string; cut: boolean };

/** The answer (any status below 400 but a redirect, 304 included) or the failure; the URL called and the egress proxy used either way. */
export type RuntimeAnswer = { url: URL; proxy: string | null } & ({ ok: true; res: Response } | { ok: false; failure: RuntimeFailure });

export function runtimeUrl(baseUrl: string, path: string): URL {
  return new URL(`${baseUrl.replace(/\/+$/, "")}${RUNTIME_API_PREFIX}${path}`);
}

/** A status that may be different if asked again a little later: 408, 429, 5xx. */
export function retryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** The control plane's 401 for a token whose installation was deleted: no rotation brings it back. */
export function installationDeleted(status: number, code: unknown): boolean {
  return status === 401 && code === "installation_deleted";
}

export async function callRuntimeApi(link: RuntimeLink, req: RuntimeRequest): Promise<RuntimeAnswer> {
  const url = runtimeUrl(link.baseUrl, req.path);
  const proxy = proxyFor(url, link.egress) ?? null;
  const headers: Record<string, string> = { authorization: `Bearer ${link.token}`, accept: "application/json", ...req.headers };
  if (link.userAgent) headers["user-agent"] = link.userAgent;
  if (req.body !== undefined) headers["content-type"] = "application/json";
  const init: RequestInit & { proxy?: string; tls?: { ca?: string[] } } = {
    method: req.method,
    headers,
    body: req.body === undefined ? undefined : req.body instanceof JsonText ? req.body.text : JSON.stringify(req.body),
    signal: AbortSignal.timeout(req.timeoutMs),
    // Never followed: the runtime token goes to the configured URL only.
    redirect: "manual",
  };
  if (proxy) init.proxy = proxy;
  if (link.ca) init.tls = { ca: link.ca };
  let res: Response;
  try {
    res = await (link.fetch ?? fetch)(url.href, init);
  } catch (error) {
    return { url, proxy, ok: false, failure: { kind: "network", error } };
  }
  if (res.status >= 300 && res.status < 400 && res.status !== 304) {
    await res.body?.cancel();
    return { url, proxy, ok: false, failure: { kind: "redirect", status: res.status, location: res.headers.get("location") } };
  }
  if (res.status >= 400) {
    // Up to ERROR_BODY_LIMIT: the body may come from the egress proxy too (an error page).
    const { text, cut } = await readErrorBody(res);
    return { url, proxy, ok: false, failure: { kind: "status", status: res.status, problem: cut ? null : problemOf(text), text, cut } };
  }
  return { url, proxy, ok: true, res };
}

function problemOf(text: string): ProblemBody | null {
  try {
    const doc = JSON.parse(text) as unknown;
    return doc && typeof doc === "object" ? (doc as ProblemBody) : null;
  } catch {
    return null;
  }
}
