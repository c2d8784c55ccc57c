// The local API on the unix socket (ARCHITECTURE.md "Proxy daemon, local API"): a router over
// the route modules of this folder. Every route but /readyz needs the runtime token, or the
// front end's credential of this boot (SVC_FRONTEND_TOKEN), as a bearer. Errors are in OpenAI format {error:{message,type,code}} on every route, since the
// Pipe relays them. Bodies are read within a per-route limit (json-body.ts): a client's
// mistake is a 4xx with a stable code, never a 500.
// A decision is answered only after its audit record is durable in the spool.
// Adding routes: write `xRoutes(ctx: RouteContext): Route[]` in its own module and list it in
// ROUTE_MODULES below.
import { NO_TRACING, type Tracing } from "../../tracing/index.ts";
import type { FrontendUser } from "../../contract/local-api.ts";
import { requestTarget } from "../../contract/request-target.ts";
import type { Logger } from "../../log/index.ts";
import { UnrecordableCall } from "../audit/recorder.ts";
import { SpoolFullError } from "../audit/spool-space.ts";
import type { CredentialSync } from "../link/credential-sync.ts";
import type { Pipeline } from "../pipeline/pipeline.ts";
import type { ProxyStatus } from "../policy/status.ts";
import { chatRoutes } from "./chat-route.ts";
import { discardUnread, TOOL_BODY_LIMIT } from "./json-body.ts";
import { openAIError } from "./model-forward.ts";
import { BadUserHeader, bearerMatcher, userFromHeaders } from "./request-user.ts";
import type { Route, RouteContext, RouteHandler } from "./routes.ts";
import { statusRoutes } from "./status-routes.ts";
import { toolRoutes } from "./tool-routes.ts";

export { READYZ_PATH } from "./status-routes.ts";

export type LocalApiDeps = {
  token: string;
  /** The front end's credential of this boot, accepted like the runtime token; null: none. */
  frontendToken?: string | null;
  status: ProxyStatus;
  /** The governed-call pipeline, shared with the MCP gateway (../pipeline/). */
  pipeline: Pipeline;
  credentials: Pick<CredentialSync, "unseal">;
  /** CA certificates for the model endpoint (system roots + SVC_PROXY_CA_FILE), or null for the defaults. */
  modelCa: string[] | null;
  spoolDepth: () => number;
  log: Logger;
  fetchImpl?: typeof fetch;
  /** The clock policy conditions see as `now` (tests set it). */
  now?: () => Date;
  /** Routes of another subsystem served here too (the MCP ones, ../mcp/local-routes.ts). */
  extraRoutes?: Route[];
  /** OpenTelemetry traces (../tracing.ts); off when absent. */
  tracing?: Tracing;
};

/** Every route module of the local API, in no particular order. */
const ROUTE_MODULES: ((c: RouteContext) => Route[])[] = [statusRoutes, chatRoutes, toolRoutes];

export function createLocalApi(d: LocalApiDeps): (req: Request) => Promise<Response> {
  const ctx: RouteContext = {
    status: d.status,
    pipeline: d.pipeline,
    credentials: d.credentials,
    modelCa: d.modelCa,
    spoolDepth: d.spoolDepth,
    log: d.log,
    now: d.now ?? (() => new Date()),
    tracing: d.tracing ?? NO_TRACING,
    ...(d.fetchImpl ? { fetchImpl: d.fetchImpl } : {}),
  };
  return routeRequests({ runtime: d.token, frontend: d.frontendToken ?? null }, [...ROUTE_MODULES.flatMap((m) => m(ctx)), ...(d.extraRoutes ?? [])], d.log);
}

/**
 * The router: token check (except public routes), 404 for an unknown path, 405 with Allow for
 * a known path asked with another method (HEAD answered like GET), 400 for a bad user header,
 * and a 500 that fails closed when a route throws (the audit record could not be written).
 * Every answer waits for the request's body to be read (or discarded within a bound).
 */
export function routeRequests(tokens: { runtime: string; frontend: string | null }, list: Route[], log: Logger): (req: Request) => Promise<Response> {
  const routes = new Map<string, Map<string, RouteHandler>>();
  const publicPaths = new Set<string>();
  const supervisorPaths = new Set<string>();
  for (const r of list) {
    const methods = routes.get(r.path) ?? new Map<string, RouteHandler>();
    if (methods.has(r.method)) throw new Error(`local API: ${r.method} ${r.path} is defined twice`);
    methods.set(r.method, r.handler);
    routes.set(r.path, methods);
    if (r.public) publicPaths.add(r.path);
    if (r.runtimeTokenOnly) supervisorPaths.add(r.path);
  }

  const isRuntime = bearerMatcher(tokens.runtime);
  const isFrontend = tokens.frontend ? bearerMatcher(tokens.frontend) : () => false;
  const limits = new Map(list.map((r) => [r.path, r.bodyLimit ?? TOOL_BODY_LIMIT]));
  // Read before answering (json-body.ts discardUnread): whatever the answer, the body the
  // route left unread is read first, within the route's limit.
  return async (req) => {
    const res = await answer(req);
    // (A decision read its body: nothing to wait for, and no await on its way back.)
    if (!req.bodyUsed) await discardUnread(req, limits.get(requestTarget(req.url).path) ?? TOOL_BODY_LIMIT);
    return res;
  };

  async function answer(req: Request): Promise<Response> {
    const { path } = requestTarget(req.url);
    if (!publicPaths.has(path)) {
      const auth = req.headers.get("authorization");
      if (!isRuntime(auth)) {
        if (!isFrontend(auth))
          return openAIError(401, "the runtime token is required: Authorization: Bearer <SVC_RUNTIME_TOKEN> (the front end: its SVC_FRONTEND_TOKEN)", "authentication_error", "unauthorized");
        if (supervisorPaths.has(path)) return openAIError(403, `${path} is the supervisor's: the runtime token is required, the front end's credential is not enough`, "permission_error", "forbidden");
      }
    }
    const methods = routes.get(path);
    if (!methods) return openAIError(404, `no route ${req.method} ${path}`, "invalid_request_error", "not_found");
    // HEAD is answered like GET (health checkers use it); Bun sends no body for HEAD.
    const route = methods.get(req.method) ?? (req.method === "HEAD" ? methods.get("GET") : undefined);
    if (!route) {
      const allow = [...methods.keys()].flatMap((m) => (m === "GET" ? ["GET", "HEAD"] : [m])).join(", ");
      const r = openAIError(405, `${req.method} is not allowed on ${path}; allowed: ${allow}`, "invalid_request_error", "method_not_allowed");
      r.headers.set("allow", allow);
      return r;
    }
    let user: FrontendUser | null;
    try {
      user = userFromHeaders(req.headers);
    } catch (e) {
      if (e instanceof BadUserHeader) return openAIError(400, e.message, "invalid_request_error", "invalid_user");
      throw e;
    }
    try {
      return await route(req, user);
    } catch (e) {
      // No room for the audit record: fail closed, naming the spool (path, free bytes).
      if (e instanceof SpoolFullError) return openAIError(e.status, e.message, "unavailable", e.code, { spool: e.path, free_bytes: e.freeBytes });
      // The record would be refused by the control plane (a NUL in a name): nothing was written.
      if (e instanceof UnrecordableCall) return openAIError(e.status, e.message, "invalid_request_error", e.code);
      log.error("local api request failed", { path, error: (e as Error).message });
      // The audit record could not be written (or another fault): fail closed.
      return openAIError(500, "the proxy could not decide this call; it was not run", "internal_error", "internal");
    }
  }
}
