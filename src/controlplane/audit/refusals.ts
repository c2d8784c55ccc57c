// Refusals in the admin trail (issue 27): a 401 or 403 answered on an admin route of an
// existing organization is one admin event, `access.refused` (result "refused"), written here
// for every route at once by the app's HTTP hook (app.ts), never route by route. It names who
// asked (anonymous for a 401; for a 403 the person the credential proved, a member or a
// session write without its CSRF token), from which address and user agent, the route, the
// status and the problem code. How many are written is bounded (refusal-bound.ts); what goes
// past the bound is told once per organization and window (`access.refusals_suppressed`).
// Writing one never changes the answer: a failure is logged. A service that records its own
// refusal (the two-person rule's `audit:recovery.approve`, a refused key rotation) names that
// event in the problem (`admin_event`, admin-events.ts recordedRefusal): the hook leaves
// those, so one refusal is one event.
import { loggableError } from "../db/errors.ts";
import type { Db } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { identifiedPrincipal } from "../auth/plugin.ts";
import type { Principal } from "../auth/service.ts";
import { loggablePath } from "../http/log-path.ts";
import { organizationNames } from "../organizations/service.ts";
import { requestOrigin } from "../http/rate-limit.ts";
import { credentialOf, receivedRequest } from "../http/request-gate.ts";
import { ADMIN_EVENT_MEMBER, actorOf, anonymousActor, recordAdminEvent, systemActor } from "./admin-events.ts";
import { REFUSAL_BOUND, type RefusalBound, RefusalCounter, type Suppression } from "./refusal-bound.ts";

/** Longest route text an event keeps. */
const ROUTE_MAX = 300;
/** How often a refusal also writes the suppressions of ended windows (the scheduler does it too). */
const FLUSH_EVERY_MS = 1000;

/** Which organization a refused request is recorded in: the path's, or the one its credential proved. */
export type RefusalScope = { orgId: string } | "principal" | null;

export type RefusalTrail = {
  /** Records the refusal `response` of `request` when it is one (401/403) of an admin route. */
  observe(request: Request, response: Response, scope: RefusalScope): Promise<void>;
  /** Writes the suppressions of the windows ended by now (`all`: of every window, at shutdown). */
  flush(all?: boolean): Promise<void>;
  readonly counter: RefusalCounter;
};

const trails = new WeakMap<ControlPlaneDeps, RefusalTrail>();
const refusedPages = new WeakSet<Request>();

/**
 * The console refused this page request itself (a member on an admin page, an admin on an
 * owner's form, a form without its CSRF token). Refusals of the API calls a page makes are the
 * API's own events; a page is recorded only when marked, so one refusal is one event.
 */
export function markPageRefused(request: Request): void {
  refusedPages.add(receivedRequest(request));
}

export function pageRefused(request: Request): boolean {
  return refusedPages.has(request);
}

/** The trail of `deps` (one counter per process and store). */
export function refusalTrail(deps: ControlPlaneDeps, bound: RefusalBound = REFUSAL_BOUND): RefusalTrail {
  let t = trails.get(deps);
  if (!t) trails.set(deps, (t = makeTrail(deps, bound)));
  return t;
}

/** The refusal's problem code, and whether its service recorded it already (`admin_event`). */
async function problemOf(response: Response): Promise<{ code: string; recorded: boolean }> {
  const fallback = response.status === 401 ? "unauthorized" : "forbidden";
  try {
    const body = (await response.clone().json()) as Record<string, unknown>;
    const code = typeof body?.code === "string" && body.code.length <= 64 ? body.code : fallback;
    return { code, recorded: typeof body?.[ADMIN_EVENT_MEMBER] === "string" };
  } catch {
    return { code: fallback, recorded: false };
  }
}

function makeTrail(deps: ControlPlaneDeps, bound: RefusalBound): RefusalTrail {
  const counter = new RefusalCounter(bound);
  const known = new Set<string>();
  let lastFlush = 0;

  /** Refusals of organizations that do not exist are not recorded (anyone can name one). */
  const exists = async (orgId: string) => {
    if (known.has(orgId)) return true;
    if (!(await organizationNames(deps.db, [orgId])).has(orgId)) return false;
    known.add(orgId);
    return true;
  };

  const write = async (what: string, fn: (tx: Db) => Promise<unknown>) => {
    try {
      await deps.db.transaction(async (tx) => fn(tx));
    } catch (e) {
      deps.log.error("admin trail: could not record a refusal", { what, error: loggableError(e) });
    }
  };

  const flush = async (all = false) => {
    const now = deps.now();
    lastFlush = now;
    for (const s of counter.due(all ? Number.MAX_SAFE_INTEGER : now)) await write("suppressed refusals", async (tx) => writeSuppression(tx, s, now));
  };

  const observe = async (request: Request, response: Response, scope: RefusalScope) => {
    if ((response.status !== 401 && response.status !== 403) || scope === null) return;
    const principal = identifiedPrincipal(request) ?? (credentialOf(request) as Principal | undefined);
    const orgId = scope === "principal" ? principal?.orgId : scope.orgId;
    if (!orgId || !(await exists(orgId))) return;
    const origin = requestOrigin(deps, request);
    const { code, recorded } = await problemOf(response);
    if (recorded) return;
    const now = deps.now();
    if (now - lastFlush >= FLUSH_EVERY_MS) await flush();
    if (!counter.admit(orgId, origin.ip, code, now)) return;
    // A 401 proved nobody; a 403 names whom the credential proved (when it proved anyone here).
    const actor = response.status === 403 && principal?.orgId === orgId ? actorOf({ ...principal, ...origin }) : anonymousActor(origin);
    const route = `${request.method} ${loggablePath(new URL(request.url).pathname)}`.slice(0, ROUTE_MAX);
    await write("refusal", async (tx) =>
      recordAdminEvent(tx, { orgId, action: "access.refused", actor, target: { type: "route", id: route, name: null }, result: "refused", status: response.status, code }, now),
    );
  };

  return { observe, flush, counter };
}

async function writeSuppression(tx: Db, s: Suppression, now: number): Promise<void> {
  await recordAdminEvent(
    tx,
    {
      orgId: s.orgId,
      action: "access.refusals_suppressed",
      actor: systemActor("controlplane"),
      target: { type: "route", id: null, name: null },
      result: "refused",
      status: 0,
      code: "suppressed",
      reason: `${s.suppressed} refusals past the admin trail's bound were counted, not written, from ${new Date(s.windowStart).toISOString()} for ${(s.windowEnd - s.windowStart) / 1000} s`,
      after: { window_start: new Date(s.windowStart).toISOString(), window_end: new Date(s.windowEnd).toISOString(), suppressed: s.suppressed, by: s.by, other: s.other },
    },
    now,
  );
}

/** Every window's suppressions written when it ends, even with no refusal after it (`svc controlplane serve`). */
export function startRefusalFlush(deps: ControlPlaneDeps): () => Promise<void> {
  const trail = refusalTrail(deps);
  let running: Promise<void> | null = null;
  const timer = setInterval(() => {
    running ??= trail.flush().finally(() => {
      running = null;
    });
  }, REFUSAL_BOUND.windowMs / 4);
  return async () => {
    clearInterval(timer);
    await running;
    await trail.flush(true);
  };
}
