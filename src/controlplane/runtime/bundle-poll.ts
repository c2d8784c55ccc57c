// The bundle poll that changes nothing, answered before the HTTP pipeline (issue 14: at least
// 20,000 polls answered 304 per second). Every proxy replica polls GET
// /api/v1/runtime/policy-bundle with If-None-Match every few seconds, and almost every poll is
// a 304. Through Elysia (routing, query schema, hooks, the OpenAPI wrapper) one cost ~190 µs of
// CPU; here it is the token check, one revision read and the ETag comparison.
//
// Only a poll this can answer whole is answered here: GET, exactly that path, a query of at
// most `version` and `conditions` (once each, nothing escaped, values the route accepts), a
// runtime bearer token that is current, and an If-None-Match naming the current ETag. Anything
// else (no or stale ETag, unknown or rotated token, other parameters) returns null and takes
// the full pipeline, which answers exactly as before (the 200 with the bundle, 401, 422).
//
// The token: the first poll runs the token query (installations ⋈ organizations, the same one
// every runtime call runs) and keeps, under the token's SHA-256, the organization and its
// revision read with it. A later poll reads only the organization's revision: unchanged means
// the token is still current, because everything that ends a runtime token (rotation,
// deleting the installation) bumps the revision in the same transaction. A changed revision
// runs the token query again. So a rotated token is refused at once, on every replica.
import { bearer } from "../../contract/bearer.ts";
import { requestTarget } from "../../contract/request-target.ts";
import { POLICY_BUNDLE_PATH } from "../../contract/runtime-api.ts";
import { hashSecret, isKind } from "../auth/tokens.ts";
import { etagMatches, parseBundleVersion } from "../bundle/compile.ts";
import { bundleForm, servedEtags } from "../bundle/served-etags.ts";
import { expressibleFeatures } from "../replicas/service.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { findInstallationByToken } from "../installations/runtime-auth.ts";
import { orgRevision } from "../organizations/service.ts";

/** Tokens remembered at most (a few per installation in practice); all forgotten when full. */
const MAX_TOKENS = 4096;

type Poll = { version: 1 | 2; conditions: boolean };

/** The poll's query when it holds only what the route takes, in the plain form; null otherwise. */
export function pollQuery(search: string): Poll | null {
  let version: string | undefined;
  let conditions: string | undefined;
  if (search !== "") {
    for (const pair of search.split("&")) {
      if (pair.includes("%") || pair.includes("+")) return null;
      const at = pair.indexOf("=");
      if (at < 0) return null;
      const key = pair.slice(0, at);
      const value = pair.slice(at + 1);
      if (key === "version" && version === undefined && value.length <= 10) version = value;
      else if (key === "conditions" && conditions === undefined && value.length <= 1) conditions = value;
      else return null;
    }
  }
  const v = parseBundleVersion(version);
  return v === null ? null : { version: v, conditions: conditions === "1" };
}

type Known = { orgId: string; installationId: string; revision: number };

/** The token query: the token's organization and revision, remembered; null when the token is not current. */
async function tokenRevision(deps: ControlPlaneDeps, known: Map<string, Known>, hash: string, token: string): Promise<number | null> {
  const caller = await findInstallationByToken(deps, token, {});
  if (!caller || caller.orgRevision === undefined) {
    known.delete(hash);
    return null;
  }
  if (known.size >= MAX_TOKENS) known.clear();
  known.set(hash, { orgId: caller.orgId, installationId: caller.installationId, revision: caller.orgRevision });
  return caller.orgRevision;
}

/**
 * Revision reads shared by the polls of one organization that arrived before the read began:
 * the first poll schedules the read for the end of this turn of the event loop, polls arriving
 * until then join it. The read starts after each of them arrived, so each still sees every
 * change committed before it was sent (a rotated token is refused at once, as with one read
 * per poll); under load one statement answers the polls of a whole turn.
 */
export function sharedRevisionReads(read: (orgId: string) => Promise<number>): (orgId: string) => Promise<number> {
  const next = new Map<string, Promise<number>>();
  // Not async: the caller awaits the shared promise itself, with no wrapper promise per poll.
  // eslint-disable-next-line @typescript-eslint/promise-function-async
  return (orgId) => {
    let pending = next.get(orgId);
    if (!pending) {
      pending = new Promise<number>((resolve, reject) =>
        setImmediate(() => {
          next.delete(orgId);
          read(orgId).then(resolve, reject);
        }),
      );
      next.set(orgId, pending);
    }
    return pending;
  };
}

/**
 * A 304 for an unchanged bundle poll, or null: the request then takes the full pipeline. A
 * request that is no such poll (another path or method, no If-None-Match, another query, no
 * runtime token) is null at once, without a promise.
 */
export function bundlePollShortcut(deps: ControlPlaneDeps): (request: Request) => Promise<Response | null> | null {
  /** SHA-256 of a runtime token → its organization and the revision read with the token. */
  const known = new Map<string, Known>();
  // The ETags this replica served (they name a digest of the body, bundle/served-etags.ts).
  const served = servedEtags(deps);
  const readRevision = sharedRevisionReads(async (orgId) => orgRevision(deps.db, orgId));
  // The 304's series of the request metrics, looked up once.
  const counted = deps.metrics?.requestSeries("GET", POLICY_BUNDLE_PATH, 304);
  // The last query and what it asked for (every replica of a version sends the same one).
  let lastSearch = "";
  let lastPoll = pollQuery("")!;
  let lastEtag = "";
  let lastInit: ResponseInit = {};
  const answer = async (t0: number, ifNoneMatch: string, poll: Poll, token: string): Promise<Response | null> => {
    // The revision of the token's organization (null: the token is not current).
    let revision: number | null;
    const hash = hashSecret(token);
    try {
      const seen = known.get(hash);
      revision = seen && (await readRevision(seen.orgId)) === seen.revision ? seen.revision : await tokenRevision(deps, known, hash, token);
    } catch {
      return null; // the store failed: the pipeline answers (and logs) it
    }
    if (revision === null) return null;
    // Never served here at this revision: the pipeline compiles it (and answers 304 if unchanged).
    const etag = served.get(known.get(hash)!.installationId, bundleForm(poll.version, poll.conditions, expressibleFeatures(deps).key), revision);
    if (!etag || !etagMatches(ifNoneMatch, etag)) return null;
    counted?.((performance.now() - t0) / 1000);
    // The answer's headers built once per ETag (the Response copies them).
    if (etag !== lastEtag) {
      lastEtag = etag;
      lastInit = { status: 304, headers: new Headers({ etag, "cache-control": "no-store" }) };
    }
    return new Response(null, lastInit);
  };
  return (request): Promise<Response | null> | null => {
    if (request.method !== "GET") return null;
    const t0 = performance.now();
    const { path, search } = requestTarget(request.url);
    if (path !== POLICY_BUNDLE_PATH) return null;
    const headers = request.headers;
    const ifNoneMatch = headers.get("if-none-match");
    if (!ifNoneMatch) return null;
    let poll: Poll | null = lastPoll;
    if (search !== lastSearch) {
      poll = pollQuery(search);
      if (!poll) return null;
      lastSearch = search;
      lastPoll = poll;
    }
    const token = bearer(headers.get("authorization"));
    if (!token || !isKind(token, "runtime")) return null;
    return answer(t0, ifNoneMatch, poll, token);
  };
}
