// The console's way to the service: the same JSON admin API the CLI uses, called in-process
// with the signed-in user's session cookie (and CSRF header for writes). Pages render what it
// answers, or its problem+json `detail` as an error banner; roles are enforced by the API too.
import { CSRF_HEADER } from "../auth/plugin.ts";
import { type RequestOrigin, carryOrigin } from "../http/request-gate.ts";

export type ApiHandle = (request: Request) => Promise<Response>;

export type ApiProblem = { status: number; code: string; detail: string; errors?: Array<{ path: string; message: string }> };
export type ApiResult<T> = { ok: true; status: number; data: T } | { ok: false; status: number; problem: ApiProblem };

/** What the console needs to call the API as the signed-in user. */
export type ApiCaller = {
  sessionRaw: string;
  csrfToken: string;
  orgId: string;
  /** The session cookie's name in this mode (sessionCookieName). */
  cookieName: string;
  /** The browser's address and user agent, carried into every call (request-gate.ts carryOrigin). */
  origin?: RequestOrigin;
};

export const API_ORIGIN = "http://localhost";

export class ConsoleApi {
  constructor(
    private readonly handle: ApiHandle,
    private readonly caller: ApiCaller,
  ) {}

  /** Path under the caller's organization: org("/agents") → /api/v1/organizations/org_…/agents */
  org(path: string): string {
    return `/api/v1/organizations/${encodeURIComponent(this.caller.orgId)}${path}`;
  }

  async get<T>(path: string): Promise<ApiResult<T>> {
    return this.send<T>("GET", path);
  }

  /** An in-process request to the API, carrying the browser's origin. */
  private request(path: string, init: RequestInit): Request {
    const request = new Request(API_ORIGIN + path, init);
    return this.caller.origin ? carryOrigin(request, this.caller.origin) : request;
  }

  /** A GET whose answer is passed on as it is (a file streamed to the browser). */
  async raw(path: string): Promise<Response> {
    return this.handle(this.request(path, { headers: { cookie: `${this.caller.cookieName}=${this.caller.sessionRaw}` } }));
  }

  async send<T>(method: string, path: string, body?: unknown): Promise<ApiResult<T>> {
    const headers: Record<string, string> = { cookie: `${this.caller.cookieName}=${this.caller.sessionRaw}`, accept: "application/json" };
    if (method !== "GET" && method !== "HEAD") headers[CSRF_HEADER] = this.caller.csrfToken;
    if (body !== undefined) headers["content-type"] = "application/json";
    let res: Response;
    try {
      res = await this.handle(this.request(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }));
    } catch (e) {
      return { ok: false, status: 500, problem: { status: 500, code: "internal", detail: `the service did not answer: ${String(e)}` } };
    }
    return readResult<T>(res);
  }

  /** A POST whose success is a body of bytes (an escrow recovery's plaintext), read as UTF-8 text. */
  async postForText(path: string): Promise<ApiResult<string>> {
    let res: Response;
    try {
      res = await this.handle(
        this.request(path, { method: "POST", headers: { cookie: `${this.caller.cookieName}=${this.caller.sessionRaw}`, accept: "application/octet-stream", [CSRF_HEADER]: this.caller.csrfToken } }),
      );
    } catch (e) {
      return { ok: false, status: 500, problem: { status: 500, code: "internal", detail: `the service did not answer: ${String(e)}` } };
    }
    if (res.ok) return { ok: true, status: res.status, data: await res.text() };
    return readResult<string>(res) as Promise<ApiResult<string>>;
  }
}

export async function readResult<T>(res: Response): Promise<ApiResult<T>> {
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (res.ok) return { ok: true, status: res.status, data: json as T };
  const p = (json ?? {}) as Partial<ApiProblem> & { title?: string };
  return {
    ok: false,
    status: res.status,
    problem: {
      status: res.status,
      code: typeof p.code === "string" ? p.code : "http_" + res.status,
      detail: typeof p.detail === "string" && p.detail ? p.detail : (p.title ?? `the service answered ${res.status}`),
      ...(Array.isArray(p.errors) ? { errors: p.errors } : {}),
    },
  };
}
