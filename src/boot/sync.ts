// The boot tool sync: PUT the manifest to {base}/api/v1/runtime/tools with the runtime token,
// 5 attempts over about 15 s (spec §8), then give up so the container exits. Statuses that a
// retry cannot change (401, 404, 409 and other 4xx but 408/429) fail at once; every attempt
// is logged with its number so the retry count stays observable. The call itself is the
// runtime's shared one (src/runtime-link/request.ts, as the proxy's client makes it); what a
// failure means, in the spec's words, is here.
import { Value } from "@sinclair/typebox/value";
import type { ToolManifest, ToolSyncResult } from "../contract/manifest.ts";
import { redactUrlCredentials } from "../contract/egress.ts";
import { RUNTIME_API_PREFIX, type ToolConflictHolder, ToolConflictProblem } from "../contract/runtime-api.ts";
import type { Logger } from "../log/index.ts";
import { type Egress, proxyFor, viaEgress } from "../runtime-link/egress.ts";
import { type ProblemBody, type RuntimeFailure, callRuntimeApi, installationDeleted, retryableStatus, runtimeUrl } from "../runtime-link/request.ts";
import { VERSION } from "../version.ts";

/** The tool sync's route, under the runtime API's prefix. */
const TOOLS = "/tools";
export const TOOLS_PATH = `${RUNTIME_API_PREFIX}${TOOLS}`;
export const SYNC_ATTEMPTS = 5;
/** Waits between attempts: 1+2+4+8 = 15 s in all. */
export const SYNC_DELAYS_MS = [1000, 2000, 4000, 8000] as const;
export const SYNC_ATTEMPT_TIMEOUT_MS = 5000;
export const SYNC_FAILED = "registering the packs' tools failed; refusing to start";

export type SyncOptions = {
  controlPlaneUrl: string;
  token: string;
  manifest: ToolManifest;
  egress: Egress;
  /** SVC_PROXY_CA_FILE's certificates beside the system roots (runtime-link/trust.ts), when set. */
  ca?: string[] | null;
  log: Logger;
  /** Injected by unit tests; the real ones by default. */
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
};

export type AttemptFailure = { retry: boolean; explanation: string; status?: number };

/** The tool sync gave up: `message` is the spec's line plus the cause. */
export class ToolSyncError extends Error {
  override name = "ToolSyncError";
  constructor(
    readonly attempts: number,
    readonly last: AttemptFailure,
  ) {
    super(`${SYNC_FAILED}: ${last.explanation} (${attempts} attempt${attempts === 1 ? "" : "s"})`);
  }
}

/** Who holds a conflicting tool name, as the 409 tool_conflict body (contract ToolConflictProblem) says. */
export function conflictHolder(holder: ToolConflictHolder): string {
  if ("admin" in holder) return "an admin";
  return `another installation, ${holder.installation_id}${holder.installation_name ? ` (${holder.installation_name})` : ""}`;
}

/** What a failed response means and whether trying again can help (pure). */
export function explainStatus(status: number, problem: ProblemBody | null, base: string, path: string = TOOLS_PATH): AttemptFailure {
  const detail = typeof problem?.detail === "string" ? problem.detail : typeof problem?.title === "string" ? problem.title : "";
  if (installationDeleted(status, problem?.code)) {
    // A rotation cannot help: the control plane names the deleted installation and the way on.
    return { status, retry: false, explanation: `HTTP 401: ${detail || "the runtime token's installation was deleted"}` };
  }
  if (status === 401) {
    return {
      status,
      retry: false,
      explanation:
        "HTTP 401: the runtime token (SVC_RUNTIME_TOKEN) is wrong or was rotated; get a new one with `svc bot credential --installation <id> --workspace <ws> --rotate` piped to your secret manager, then restart the container",
    };
  }
  if (status === 404) {
    const suffix = /\/api\/v1\/?$/.test(base) ? ` — it ends in /api/v1: remove that suffix` : "";
    return {
      status,
      retry: false,
      explanation: `HTTP 404: the control-plane URL is wrong or does not serve ${path}; SVC_RUNTIME_CONTROL_PLANE_URL must be the base URL with no /api/v1 suffix (it is "${redactUrlCredentials(base)}"${suffix})`,
    };
  }
  if (status === 409) {
    // Spec §7: a tool name is already registered in the workspace by an admin or another
    // installation. Tool and holder are named only from a body that is the contract's
    // ToolConflictProblem; any other 409 gets the spec's cause (and its detail, if any).
    const fix = "rename the tool in the pack or remove the other registration";
    const explanation = Value.Check(ToolConflictProblem, problem)
      ? `HTTP 409: tool "${problem.tool}" is already registered in the workspace by ${conflictHolder(problem.holder)}; ${fix}`
      : `HTTP 409: a tool name is already registered in the workspace by an admin or another installation${detail ? `: ${detail}` : ""}; ${fix}`;
    return { status, retry: false, explanation };
  }
  return { status, retry: retryableStatus(status), explanation: `HTTP ${status}${detail ? `: ${detail}` : ""}` };
}

export function explainNetworkError(e: unknown, url: URL, egress: Egress): AttemptFailure {
  const what = (e as Error)?.name === "TimeoutError" ? `no answer within ${SYNC_ATTEMPT_TIMEOUT_MS / 1000} s` : ((e as Error)?.message ?? String(e));
  return {
    retry: true,
    // Logged and printed at exit: the proxy's password never is (the error text may quote it too).
    explanation: redactUrlCredentials(`cannot reach ${url.host}${viaEgress(proxyFor(url, egress))}: ${what}; if egress is blocked, set SVC_PROXY_EGRESS_PROXY or add the host to SVC_PROXY_NO_PROXY`),
  };
}

/**
 * A redirect is not followed (the runtime token goes only to the configured URL), and trying
 * again cannot change it.
 */
export function explainRedirect(status: number, location: string | null): AttemptFailure {
  return {
    status,
    retry: false,
    explanation: redactUrlCredentials(
      `HTTP ${status}: a redirect${location ? ` to ${location}` : ""}, not followed: the runtime token goes only to SVC_RUNTIME_CONTROL_PLANE_URL; set it to where the control plane really is`,
    ),
  };
}

/** What a failed call of the runtime API means for the tool sync (pure). */
export function explainFailure(f: RuntimeFailure, url: URL, o: Pick<SyncOptions, "controlPlaneUrl" | "egress">): AttemptFailure {
  if (f.kind === "network") return explainNetworkError(f.error, url, o.egress);
  if (f.kind === "redirect") return explainRedirect(f.status, f.location);
  return explainStatus(f.status, f.problem, o.controlPlaneUrl);
}

export type Attempt<T> = { ok: true; value: T } | { ok: false; failure: AttemptFailure };

/**
 * One control-plane request with the tool sync's attempts (spec §8): up to SYNC_ATTEMPTS, the
 * waits of SYNC_DELAYS_MS between them, each failure logged with its number; a failure that a
 * retry cannot change ends at once. Throws ToolSyncError.
 */
export async function withAttempts<T>(o: Pick<SyncOptions, "log" | "sleep">, attempt: () => Promise<Attempt<T>>): Promise<T> {
  const sleep = o.sleep ?? (async (ms: number) => Bun.sleep(ms));
  let last: AttemptFailure = { retry: true, explanation: "not attempted" };
  for (let n = 1; n <= SYNC_ATTEMPTS; n++) {
    const r = await attempt();
    if (r.ok) return r.value;
    last = r.failure;
    const final = !last.retry || n === SYNC_ATTEMPTS;
    const delay = final ? undefined : SYNC_DELAYS_MS[n - 1]!;
    o.log.warn(`tool sync: attempt ${n}/${SYNC_ATTEMPTS} failed: ${last.explanation}${delay === undefined ? "" : `; retrying in ${delay / 1000} s`}`, {
      attempt: n,
      of: SYNC_ATTEMPTS,
      status: last.status,
      retry: !final,
      retry_in_ms: delay,
    });
    if (delay === undefined) throw new ToolSyncError(n, last);
    await sleep(delay);
  }
  throw new ToolSyncError(SYNC_ATTEMPTS, last);
}

/** PUT the manifest, retrying as the spec says. Resolves with the counts or throws ToolSyncError. */
export async function syncTools(opts: SyncOptions): Promise<ToolSyncResult> {
  const link = { baseUrl: opts.controlPlaneUrl, token: opts.token, egress: opts.egress, ca: opts.ca, userAgent: `svc-boot/${VERSION}`, fetch: opts.fetch };
  const url = runtimeUrl(opts.controlPlaneUrl, TOOLS);
  let attempt = 0;
  return withAttempts(opts, async () => {
    attempt++;
    const r = await callRuntimeApi(link, { method: "PUT", path: TOOLS, body: opts.manifest, timeoutMs: SYNC_ATTEMPT_TIMEOUT_MS });
    if (!r.ok) return { ok: false, failure: explainFailure(r.failure, url, opts) };
    // A 304 (never sent for a PUT) is no success either.
    if (!r.res.ok) return { ok: false, failure: explainStatus(r.res.status, null, opts.controlPlaneUrl) };
    try {
      const result = (await r.res.json()) as Partial<ToolSyncResult>;
      const counts: ToolSyncResult = {
        added: result.added ?? 0,
        removed: result.removed ?? 0,
        unchanged: result.unchanged ?? 0,
        updated: result.updated ?? 0,
        tool_count: result.tool_count ?? opts.manifest.tools.length,
      };
      opts.log.info(
        `tool sync: registered ${counts.tool_count} tool(s) at ${TOOLS_PATH} (added ${counts.added}, removed ${counts.removed}, unchanged ${counts.unchanged}, updated ${counts.updated})`,
        { attempt, ...counts },
      );
      return { ok: true, value: counts };
    } catch (e) {
      // An answer cut off or not JSON: as the network's failure, tried again.
      return { ok: false, failure: explainNetworkError(e, url, opts.egress) };
    }
  });
}
