// The periodic checkpoint: every SVC_CP_AUDIT_CHECKPOINT_SECONDS (default hourly), each
// organization whose chain heads (proxy and store chains) moved gets a signed checkpoint (service.ts makeCheckpoint,
// which makes none when nothing moved). Several replicas ticking at once are safe: checkpoint
// numbers are unique per organization, and the one that loses finds nothing new to sign.
import type { ControlPlaneDeps } from "../deps.ts";
import { checkpointOrganizations, makeCheckpoint } from "./checkpoints.ts";

export function startCheckpointScheduler(deps: ControlPlaneDeps): () => Promise<void> {
  let stopped = false;
  let ticking: Promise<void> | null = null;
  const tickOnce = async () => {
    try {
      for (const orgId of await checkpointOrganizations(deps.db)) {
        if (stopped) return;
        try {
          const { checkpoint, created } = await makeCheckpoint(deps, orgId);
          if (created && checkpoint) deps.log.info("audit checkpoint signed", { org_id: orgId, number: checkpoint.number });
        } catch (e) {
          deps.log.error("audit checkpoint failed", { org_id: orgId, error: (e as Error).message });
        }
      }
    } catch (e) {
      deps.log.error("audit checkpoint scheduler failed", { error: (e as Error).message });
    }
  };
  const tick = () => {
    if (stopped || ticking) return;
    ticking = tickOnce().finally(() => {
      ticking = null;
    });
  };
  const every = deps.config.auditCheckpointSeconds * 1000;
  let due = Date.now() + every;
  const timer = setInterval(() => {
    due = Date.now() + every;
    tick();
  }, every);
  // What `svc audit verify` tells about records chained and not yet signed.
  deps.checkpointDueAt = () => (stopped ? null : due);
  return async () => {
    stopped = true;
    clearInterval(timer);
    await ticking;
  };
}
