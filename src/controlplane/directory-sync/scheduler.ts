// The periodic loop of directory sync: every tick, each enabled organization whose last run
// started at least its interval ago (or never ran) gets a run. Whether it is due and whether a
// run is already in progress (on any replica sharing the database) is decided by one atomic
// claim in the database (service.ts `startIfDue`), so replicas do not all call Graph at once.
// stop() ends the loop, aborts running syncs and waits for their records.
import { loggableError } from "../db/errors.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { actingAsSystem } from "../audit/admin-events.ts";
import { enabledConfigs } from "./config.ts";
import { startIfDue, stopRuns } from "./service.ts";

export { ABANDONED_RUN_MS } from "./service.ts";
export const DEFAULT_TICK_MS = 30_000;

export type SchedulerOptions = { tickMs?: number };

export function startDirectorySyncScheduler(deps: ControlPlaneDeps, options: SchedulerOptions = {}): () => Promise<void> {
  let stopped = false;
  let ticking: Promise<void> | null = null;
  const tickOnce = async () => {
    let configs: Awaited<ReturnType<typeof enabledConfigs>>;
    try {
      configs = await enabledConfigs(deps.db);
    } catch (e) {
      deps.log.error("directory sync scheduler failed", { error: loggableError(e) });
      return;
    }
    for (const config of configs) {
      if (stopped) return;
      try {
        await startIfDue(deps, config, actingAsSystem(deps, "directory-sync"));
      } catch (e) {
        deps.log.error("directory sync run failed to start", { org_id: config.orgId, error: loggableError(e) });
      }
    }
  };
  // One tick at a time: a slow database makes ticks late, never overlapping.
  const tick = () => {
    if (stopped || ticking) return;
    ticking = tickOnce().finally(() => {
      ticking = null;
    });
  };
  const timer = setInterval(tick, options.tickMs ?? DEFAULT_TICK_MS);
  queueMicrotask(tick);
  return async () => {
    stopped = true;
    clearInterval(timer);
    await ticking;
    await stopRuns(deps);
  };
}
