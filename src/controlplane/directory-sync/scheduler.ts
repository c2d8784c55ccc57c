// The periodic loop of directory sync: every tick, each enabled organization whose last run
// started at least its interval ago (or never ran) gets a run. A run another replica started
// recently and has not finished is left alone, so replicas sharing a database do not all
// call Graph at once. stop() ends the loop, aborts running syncs and waits for their records.
import type { ControlPlaneDeps } from "../deps.ts";
import { enabledConfigs, isRunning, latestRun, runSync, stopRuns } from "./service.ts";

export const DEFAULT_TICK_MS = 30_000;
/** A "running" record older than this is taken as abandoned (its process died). */
export const ABANDONED_RUN_MS = 30 * 60_000;

export type SchedulerOptions = { tickMs?: number };

/** Organizations due for a run at deps.now(). */
export function dueOrganizations(deps: ControlPlaneDeps): string[] {
  const now = deps.now();
  const due: string[] = [];
  for (const config of enabledConfigs(deps.db)) {
    if (isRunning(deps, config.orgId)) continue;
    const last = latestRun(deps.db, config.orgId);
    if (last?.status === "running" && now - last.startedAt < ABANDONED_RUN_MS) continue;
    if (!last || now - last.startedAt >= config.intervalSeconds * 1000) due.push(config.orgId);
  }
  return due;
}

export function startDirectorySyncScheduler(deps: ControlPlaneDeps, options: SchedulerOptions = {}): () => Promise<void> {
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    let due: string[];
    try {
      due = dueOrganizations(deps);
    } catch (e) {
      deps.log.error("directory sync scheduler failed", { error: (e as Error).message });
      return;
    }
    for (const orgId of due) {
      runSync(deps, orgId).catch((e) => deps.log.error("directory sync run failed to start", { org_id: orgId, error: (e as Error).message }));
    }
  };
  const timer = setInterval(tick, options.tickMs ?? DEFAULT_TICK_MS);
  queueMicrotask(tick);
  return async () => {
    stopped = true;
    clearInterval(timer);
    await stopRuns(deps);
  };
}
