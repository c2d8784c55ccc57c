// The control plane's HTTP application: problem+json errors, the OpenAPI document, and one
// module per resource folder. Admin routes live under /api/v1/organizations/{org}/…, the
// runtime API under /api/v1/runtime/…, the console at /.
import { openapi } from "@elysiajs/openapi";
import { Elysia } from "elysia";
import { agentRoutes } from "./agents/routes.ts";
import { auditChainRoutes } from "./audit-chain/routes.ts";
import { auditKeyRoutes } from "./audit-keys/routes.ts";
import { assertionKeyRoutes } from "./assertion-keys/routes.ts";
import { digestKeyRoutes } from "./organizations/digest-key-routes.ts";
import { auditRoutes } from "./audit/routes.ts";
import { authRoutes } from "./auth/routes.ts";
import { budgetRoutes } from "./budgets/routes.ts";
import { sinkRoutes } from "./sinks/routes.ts";
import { claimRoutes } from "./claims/routes.ts";
import { consoleRoutes } from "./console/routes.ts";
import { SvcError } from "../contract/errors.ts";
import { BUILD_VERSION, SERVER_VERSION_HEADER } from "../version.ts";
import { requestTarget } from "../contract/request-target.ts";
import { loggableError } from "./db/errors.ts";
import { tables } from "./db/index.ts";
import type { ControlPlaneDeps } from "./deps.ts";
import { directorySyncRoutes } from "./directory-sync/routes.ts";
import { directoryRoutes } from "./directory/routes.ts";
import { inviteRoutes } from "./invites/routes.ts";
import { gateChecks } from "./auth/plugin.ts";
import { loggablePath } from "./http/log-path.ts";
import { slowRequests } from "./http/slow-requests.ts";
import { type Gate, type GateRoute, requestGate } from "./http/request-gate.ts";
import { nulGuard } from "./http/nul-guard.ts";
import { completeDocument } from "./http/openapi-complete.ts";
import { type ErrorLogger, problemPlugin } from "./http/problem.ts";
import { installationRoutes } from "./installations/routes.ts";
import { ControlPlaneMetrics, metricsPlugin } from "./metrics/index.ts";
import { modelProfileRoutes } from "./model-profiles/routes.ts";
import { toolServerRoutes } from "./tool-servers/routes.ts";
import { toolOauthRoutes } from "./tool-oauth/routes.ts";
import { organizationRoutes } from "./organizations/routes.ts";
import { bundleAdminRoutes } from "./bundle/routes.ts";
import { policyRoutes } from "./policies/routes.ts";
import { settingsRoutes } from "./organizations/settings.ts";
import { noticeRoutes } from "./notices/routes.ts";
import { escrowRoutes } from "./escrow/routes.ts";
import { replicaRoutes } from "./replicas/routes.ts";
import { runtimeRoutes } from "./runtime/routes.ts";
import { bundlePollShortcut } from "./runtime/bundle-poll.ts";
import { type RefusalScope, pageRefused, refusalTrail } from "./audit/refusals.ts";

export const OPENAPI_PATH = "/api/v1/openapi.json";

/** Ready while the store answers a query: a load balancer's health check for a replica. */
async function storeReady(deps: ControlPlaneDeps): Promise<{ ok: true }> {
  const o = tables(deps.db).organizations;
  try {
    await deps.db.select({ id: o.id }).from(o).limit(1);
  } catch (e) {
    deps.log.error("store unavailable", { error: loggableError(e) });
    throw new SvcError("store_unavailable", "the control plane cannot reach its database; see its log");
  }
  return { ok: true };
}

const KiB = 1024;
const MiB = 1024 * KiB;

/** Body limits, by who may send to the route (http/request-gate.ts). */
export const BODY_LIMITS = {
  /** Sign-in, login requests, claim links, console forms: small JSON or form posts from anyone. */
  anonymous: 64 * KiB,
  /** Admin API writes (policies, sealed model keys, tool registrations). */
  admin: 1 * MiB,
  /** Runtime API: boot tool sync manifests, heartbeats. */
  runtime: 8 * MiB,
  /** Audit batches (500 records with their ciphertext by default; a 413 makes the shipper halve them). */
  auditBatch: 32 * MiB,
} as const;

const ORG_PATH = /^\/api\/v1\/organizations\/([^/]+)(?:\/|$)/;
const APPROVE_PATH = /^\/api\/v1\/auth\/login-requests\/[^/]+\/approve$/;

/**
 * Where a refusal (401/403) of this request is an admin event (audit/refusals.ts): the admin
 * API under an organization (that organization), the login approval and the console's pages
 * it refused itself (the organization the credential proved). The runtime API and sign-in are
 * not admin routes.
 */
export function refusalScope(request: Request, path: string): RefusalScope {
  const org = ORG_PATH.exec(path);
  if (org) return { orgId: segment(org[1]!) };
  if (APPROVE_PATH.test(path)) return "principal";
  return !path.startsWith("/api/") && pageRefused(request) ? "principal" : null;
}

/** A path segment as the router gives it to `params` (a malformed escape stays as sent). */
function segment(raw: string): string {
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** What the gate checks before reading a body: the credential each part of the API takes, and the limit. */
export function gateRoute(deps: ControlPlaneDeps) {
  // The runtime API's two routes, built once (the gate only reads them): every runtime call takes one.
  const runtime = async (r: Request) => gateChecks.runtime(deps, r);
  const auditBatch: GateRoute = { limit: BODY_LIMITS.auditBatch, jsonOnly: true, authenticate: runtime };
  const runtimeCall: GateRoute = { limit: BODY_LIMITS.runtime, jsonOnly: true, authenticate: runtime };
  return (_method: string, path: string): GateRoute => {
    if (path === "/api/v1/runtime/audit-records") return auditBatch;
    if (path.startsWith("/api/v1/runtime/")) return runtimeCall;
    // The HTTP API takes JSON only (forms are the console's); sign-in refuses other types itself (422, login CSRF).
    const jsonOnly = path.startsWith("/api/v1/") && path !== "/api/v1/auth/sessions";
    const org = ORG_PATH.exec(path);
    if (org) return { limit: BODY_LIMITS.admin, jsonOnly, authenticate: async (r) => gateChecks.admin(deps, r, segment(org[1]!)) };
    if (APPROVE_PATH.test(path)) return { limit: BODY_LIMITS.admin, jsonOnly, authenticate: async (r) => gateChecks.admin(deps, r, undefined) };
    return { limit: BODY_LIMITS.anonymous, jsonOnly };
  };
}

/** The OpenAPI document as Elysia generates it, completed (http/openapi-complete.ts). */
async function completedDocument(request: Request, response: Response): Promise<Response> {
  if (response.status !== 200 || requestTarget(request.url).path !== OPENAPI_PATH) return response;
  return Response.json(completeDocument((await response.json()) as Record<string, unknown>));
}

const gates = new WeakMap<object, Gate>();

/** The app's entry for a server: every request through the gate (Bun.serve's fetch). */
export function gateOf(app: App): Gate {
  return gates.get(app)!;
}

export function createApp(deps: ControlPlaneDeps) {
  deps.metrics ??= new ControlPlaneMetrics();
  const api = new Elysia({ prefix: "/api/v1" })
    .use(authRoutes(deps))
    .use(organizationRoutes(deps))
    .use(agentRoutes(deps))
    .use(installationRoutes(deps))
    .use(modelProfileRoutes(deps))
    .use(toolServerRoutes(deps))
    .use(toolOauthRoutes(deps))
    .use(policyRoutes(deps))
    .use(bundleAdminRoutes(deps))
    .use(directoryRoutes(deps))
    .use(inviteRoutes(deps))
    .use(auditKeyRoutes(deps))
    .use(digestKeyRoutes(deps))
    .use(assertionKeyRoutes(deps))
    .use(auditRoutes(deps))
    .use(auditChainRoutes(deps))
    .use(budgetRoutes(deps))
    .use(sinkRoutes(deps))
    .use(runtimeRoutes(deps))
    .use(claimRoutes(deps))
    .use(directorySyncRoutes(deps))
    .use(settingsRoutes(deps))
    .use(escrowRoutes(deps))
    .use(noticeRoutes(deps))
    .use(replicaRoutes(deps));

  // The console renders pages from the same JSON API the CLI uses, called in-process.
  const handle = async (request: Request): Promise<Response> => root.handle(request);
  const logFailure: ErrorLogger = ({ path, code, error }) => deps.log.error("request failed", { path: loggablePath(path), code, error: loggableError(error) });
  const root: Elysia = new Elysia({ normalize: false })
    .use(problemPlugin(logFailure))
    .use(nulGuard())
    .use(metricsPlugin(deps.metrics, deps.config.metricsToken))
    .use(
      openapi({
        path: "/api/v1/openapi",
        specPath: OPENAPI_PATH,
        documentation: {
          info: { title: "svc control plane", version: "1", description: "Admin API, runtime API and claim links. Errors are application/problem+json with a stable `code`." },
          components: {
            securitySchemes: {
              // admin API: an API token (svc_at_…) or, in the console, the session cookie (writes also need x-csrf-token)
              apiToken: { type: "http", scheme: "bearer", description: "API token `svc_at_…` (svc login)" },
              session: { type: "apiKey", in: "cookie", name: "svc_session", description: "console session (`__Host-svc_session` on https); writes need `x-csrf-token`" },
              // runtime API: an installation's runtime token (svc_rt_…)
              runtimeToken: { type: "http", scheme: "bearer", description: "runtime token `svc_rt_…` (svc bot credential)" },
            },
          },
        },
        // The document covers the HTTP API; the console's HTML pages are not part of it.
        // Not static files: the JWKS (assertion-keys/{org}/jwks.json) is an API route with a dot in its path.
        exclude: { paths: [/^\/(?!api\/v1\/)/], staticFile: false },
      }),
    )
    .get("/healthz", () => ({ ok: true }))
    .get("/readyz", async () => storeReady(deps))
    .use(api)
    .use(consoleRoutes(deps, handle)) as unknown as Elysia;
  // Every request, in-process ones (tests, the console's API calls) included, passes the gate.
  const inner = root.handle;
  const piped = requestGate(gateRoute(deps), async (request) => completedDocument(request, await inner(request)), logFailure);
  // An unchanged bundle poll (most runtime traffic) is answered 304 before the pipeline.
  const unchangedPoll = bundlePollShortcut(deps);
  // One hook for every route: a refused admin request is an event of the admin trail.
  const refusals = refusalTrail(deps);
  // A request still unanswered after 10 s is logged (one timer for the process, not one per request).
  const slow = slowRequests(deps.log);
  const gate: Gate = async (request, server) => {
    const answered = slow.watch(request);
    let res: Response;
    try {
      const polled = unchangedPoll(request);
      res = (polled && (await polled)) ?? (await piped(request, server));
    } finally {
      answered();
    }
    // Every answer names the release that gave it (issue 29): clients see version skew, and
    // check that an older control plane did not silently drop what they sent.
    res.headers.set(SERVER_VERSION_HEADER, BUILD_VERSION);
    if (res.status === 401 || res.status === 403) await refusals.observe(request, res, refusalScope(request, requestTarget(request.url).path));
    return res;
  };
  root.handle = async (request: Request) => gate(request);
  gates.set(root, gate);
  return root;
}

export type App = ReturnType<typeof createApp>;
