// The periodic verification: each organization with an audit chain is verified by the control
// plane itself (verify-store.ts, what the console's "Verify now" starts) at least every
// SVC_CP_AUDIT_VERIFY_HOURS (default 24; 0 turns it off). The per-hour roll-ups that budgets
// and `svc usage` read are checked only by such a run (audit/rollup-check.ts): without this
// schedule, someone with write access to the database who lowers a roll-up widens every budget
// until an admin happens to press Verify now. With it, the lowered roll-up is found within the
// period, the run is "tampered", and budgets sum the records again (rollup-trust.ts).
//
// Looked at on the checkpoint schedule (SVC_CP_AUDIT_CHECKPOINT_SECONDS, hourly): an
// organization whose latest run (an admin's or any replica's) started within the period is
// skipped, so replicas sharing one store verify it about once a period (two that tick together
// may both run: harmless). One organization at a time per process, each run in the background
// slices of verify-store.ts, so the schedule never holds other requests.
import { systemActor } from "../audit/admin-events.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { periodically } from "../periodic.ts";
import { checkpointOrganizations } from "./checkpoints.ts";
import { currentSigningKey } from "./signing-key.ts";
import { lastVerificationStart, startVerification, verificationSettled } from "./verify-store.ts";

const HOUR_MS = 3_600_000;

/** Starts, one after another, a run for each organization not verified within the period; returns those verified. */
export async function verifyDueOrganizations(deps: ControlPlaneDeps, stopped: () => boolean = () => false): Promise<string[]> {
  const period = deps.config.auditVerifyHours * HOUR_MS;
  if (period <= 0) return [];
  const done: string[] = [];
  for (const orgId of await checkpointOrganizations(deps.db)) {
    if (stopped()) break;
    const last = await lastVerificationStart(deps.db, orgId);
    // a run dated ahead of this clock (a row written into the store, or a replica's clock) never postpones one
    if (last !== null && last <= deps.now() && deps.now() - last < period) continue;
    await startVerification(deps, orgId, systemActor("controlplane"));
    await verificationSettled(orgId);
    deps.log.info("audit store verified on schedule", { org_id: orgId });
    done.push(orgId);
  }
  return done;
}

/**
 * Derives each organization's public key from its KMS-wrapped private key, so budgets can check
 * the latest run's seal (rollup-trust.ts) from the start; until then they sum the records.
 */
async function deriveKeys(deps: ControlPlaneDeps): Promise<void> {
  for (const orgId of await checkpointOrganizations(deps.db)) await currentSigningKey(deps.db, deps.kms, orgId, deps.log);
}

export function startVerifySchedule(deps: ControlPlaneDeps): () => Promise<void> {
  // the first look waits for them: without a key no run's seal holds, and every organization would be verified again at each start
  const derived = deriveKeys(deps).catch((e: unknown) => deps.log.error("audit signing keys could not be derived at start", { error: (e as Error).message }));
  return periodically(deps.config.auditCheckpointSeconds * 1000, async (stopped) => {
    await derived;
    return verifyDueOrganizations(deps, stopped).catch((e: unknown) => deps.log.error("audit verification schedule failed", { error: (e as Error).message }));
  });
}
