// A verification run's outcome in the admin trail. Each finished run is sealed with the
// organization's checkpoint-signing key (verification-seal.ts) and stored twice in ONE
// transaction: its row in audit_verifications (what the console and budgets read) and the admin
// event `audit_verification.run` (state, counts and seal), whose chains the next checkpoint,
// made right after, signs. The next run checks the trail's latest run against its row
// (`TrailRuns`): a finding removed or changed in the table while its event stays is a problem of
// that run, so the store is `tampered` and budgets distrust the roll-ups (rollup-trust.ts).
import { eq } from "drizzle-orm";
import type { AdminActor } from "../../contract/admin-event.ts";
import type { ExportLine } from "../../contract/stored-line.ts";
import { recordAdminEvent } from "../audit/admin-events.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { makeCheckpoint } from "./checkpoints.ts";
import { noteVerification } from "./rollup-trust.ts";
import { ensureSigningKey } from "./signing-key.ts";
import { VERIFICATION_ACTION, type VerificationOutcome, sealVerification } from "./verification-seal.ts";

const TARGET = "audit_verification";

type RunState = "verified" | "unsigned" | "tampered" | "failed";
type Outcome = Omit<VerificationOutcome, "id" | "orgId" | "startedAt" | "finishedAt" | "state"> & { state: RunState };

/** What the trail says of a run (the event's `after`). */
type TrailRun = { state: string; records: number; problems: number; rollup_mismatches: number; signature: string | null };

/** Seals the outcome, and stores the row and its admin event together; then signs a checkpoint over the event. */
export async function finishRun(deps: ControlPlaneDeps, run: { id: string; orgId: string; startedAt: number; by: AdminActor }, outcome: Outcome): Promise<void> {
  const finishedAt = deps.now();
  const sealed: VerificationOutcome = { id: run.id, orgId: run.orgId, startedAt: run.startedAt, finishedAt, ...outcome };
  // made the first time, as a checkpoint does. Without it (the KMS failing) the run is stored
  // unsealed, which budgets take for a finding: never a run left "running" for want of a seal.
  const key = await ensureSigningKey(deps, run.orgId).catch((e: unknown) => {
    deps.log.error("audit verification stored without a seal: the signing key is not available", { org_id: run.orgId, error: (e as Error).message });
    return null;
  });
  const signature = key ? sealVerification(sealed, key.privateKey) : null;
  const after: TrailRun = { state: outcome.state, records: outcome.records, problems: outcome.problems, rollup_mismatches: outcome.rollupMismatches, signature };
  const v = tables(deps.db).auditVerifications;
  await deps.db.transaction(async (tx) => {
    await tx
      .update(v)
      .set({ ...outcome, finishedAt, signature })
      .where(eq(v.id, run.id));
    await recordAdminEvent(
      tx,
      {
        orgId: run.orgId,
        action: VERIFICATION_ACTION,
        actor: run.by,
        target: { type: TARGET, id: run.id },
        after,
        severity: outcome.state === "tampered" ? "high" : undefined,
        reason: `verification ${run.id} of the audit store: ${outcome.state}, ${outcome.problems} problems, ${outcome.rollupMismatches} roll-up mismatches`,
      },
      finishedAt,
    );
  });
  // a failed run checked nothing: budgets pass over it (rollup-trust.ts), so must this memory
  if (signature && outcome.state !== "failed") noteVerification(run.orgId, run);
  // Signed at once, the event cannot be taken out of the trail without `svc audit verify` naming it.
  await makeCheckpoint(deps, run.orgId).catch((e: unknown) => deps.log.error("audit checkpoint after a verification failed", { org_id: run.orgId, error: (e as Error).message }));
}

/** The latest run the admin trail names, as the export walks past it (pure, one run kept). */
export class TrailRuns {
  private latest: { recordId: string; runId: string; after: TrailRun } | null = null;

  add(line: ExportLine): void {
    if (line.kind !== "admin" || line.action !== VERIFICATION_ACTION || !line.target?.startsWith(`${TARGET}:`)) return;
    if (this.latest && this.latest.recordId > line.id) return;
    const after = (line.admin as { after?: TrailRun } | undefined)?.after;
    if (after) this.latest = { recordId: line.id, runId: line.target.slice(TARGET.length + 1), after };
  }

  /** What is wrong with the table's row of the trail's latest run, or null when it matches. */
  async problem(db: Db, orgId: string): Promise<string | null> {
    if (!this.latest) return null;
    const { runId, after } = this.latest;
    const v = tables(db).auditVerifications;
    const [row] = await db.select().from(v).where(eq(v.id, runId));
    if (!row || row.orgId !== orgId)
      return `verification ${runId} of the admin trail (${after.state}, ${after.rollup_mismatches} roll-up mismatches) is missing from audit_verifications: it was deleted from the store`;
    if (row.signature !== after.signature || row.state !== after.state || row.rollupMismatches !== after.rollup_mismatches)
      return `verification ${runId} in audit_verifications (${row.state}, ${row.rollupMismatches} roll-up mismatches) is not what the admin trail recorded (${after.state}, ${after.rollup_mismatches} roll-up mismatches): it was changed in the store`;
    return null;
  }
}
