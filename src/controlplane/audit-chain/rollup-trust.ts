// Whether the per-hour roll-ups may be read, as the latest finished verification found them.
// Apart from verify-store.ts so budgets and usage (audit/usage.ts) ask without importing the
// verifier, which reads through the export and would close an import cycle.
//
// The red team here is someone with write access to the database who lowered a roll-up and
// wants the finding gone. The run's row is only believed when its seal (verification-seal.ts,
// signed with the KMS-wrapped checkpoint key) verifies: a row they insert or edit counts as a
// finding. A finding row they delete is noticed by this process if it saw the run (it remembers
// the newest run it has seen), and by the next run, which checks the latest run of the admin
// trail against the table (verify-store.ts). With every row deleted, the trail's runs say so.
import { and, desc, eq, inArray } from "drizzle-orm";
import { trailHolds } from "../audit/admin-events.ts";
import { type Db, tables } from "../db/index.ts";
import { derivedPublicKeys } from "./signing-key.ts";
import { VERIFICATION_ACTION, sealedRun } from "./verification-seal.ts";

/**
 * What a run that checked the roll-ups and found them equal stores as `rollup_detail`. A run of
 * a release before the check stores nothing there (NULL); it is not sealed either, so it counts
 * as a finding (rollupsDistrusted).
 */
export const ROLLUPS_EQUAL = "";

/** The states of a run that finished its check; a failed run found nothing and is passed over. */
const CHECKED = ["verified", "unsigned", "tampered"] as const;

/** The newest sealed run this process has seen, per organization: a row removed behind it is noticed. */
const newestSeen = new Map<string, { id: string; startedAt: number }>();

/** Notes a sealed run this process finished or read. */
export function noteVerification(orgId: string, run: { id: string; startedAt: number }): void {
  const seen = newestSeen.get(orgId);
  if (seen && (seen.startedAt > run.startedAt || (seen.startedAt === run.startedAt && seen.id >= run.id))) return;
  if (newestSeen.size > 10_000) newestSeen.clear();
  newestSeen.set(orgId, { id: run.id, startedAt: run.startedAt });
}

/** Organizations whose admin trail names a run: once true, always (the trail only grows, or breaks evidently). */
const trailRuns = new Set<string>();
/** When the trail was last found without a run, per organization: read again a minute later at most. */
const trailChecked = new Map<string, number>();
const TRAIL_RECHECK_MS = 60_000;

/**
 * With no run in the table: whether the admin trail names one all the same (every row deleted, in
 * a process that never saw one). Read along the admin events' index; an organization never
 * verified has few admin events, and is verified within the schedule's first look.
 */
async function trailHasRuns(db: Db, orgId: string): Promise<boolean> {
  if (trailRuns.has(orgId)) return true;
  // with the schedule off and nobody pressing Verify now, budgets would read the trail on every sum
  const checked = trailChecked.get(orgId);
  if (checked !== undefined && Date.now() - checked < TRAIL_RECHECK_MS) return false;
  if (!(await trailHolds(db, orgId, VERIFICATION_ACTION))) {
    if (trailChecked.size > 10_000) trailChecked.clear();
    trailChecked.set(orgId, Date.now());
    return false;
  }
  if (trailRuns.size > 10_000) trailRuns.clear();
  trailRuns.add(orgId);
  return true;
}

/**
 * Whether budgets and usage must not read the organization's roll-ups (audit/usage.ts then sums
 * the records, as before the roll-ups). They are read only when the latest run that finished its
 * check is sealed by the organization's key, found the store untampered and the roll-ups equal,
 * and is no older than the newest run this process has seen. Anything else (a forged or edited
 * row, a run of an older release, a run removed) fails toward distrust.
 */
export async function rollupsDistrusted(db: Db, orgId: string): Promise<boolean> {
  const v = tables(db).auditVerifications;
  const [row] = await db
    .select()
    .from(v)
    .where(and(eq(v.orgId, orgId), inArray(v.state, [...CHECKED])))
    .orderBy(desc(v.startedAt), desc(v.id))
    .limit(1);
  const seen = newestSeen.get(orgId);
  if (!row) return seen !== undefined || (await trailHasRuns(db, orgId));
  const run = sealedRun(row, derivedPublicKeys(orgId));
  if (!run.sealed) return true;
  if (seen && seen.id !== run.id && seen.startedAt >= run.startedAt) return true;
  noteVerification(orgId, run);
  return run.state === "tampered" || run.rollupMismatches > 0 || run.rollupDetail === null;
}
