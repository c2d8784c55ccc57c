// The control plane verifying its own store (the console's "Verify now", POST
// …/audit-verifications): the same check as `svc audit verify` (contract/verify/), with the
// control plane's own key as the anchor, over the export in chain order, one page of 250 rows (EXPORT_PAGE)
// per read with a turn of the event loop between pages, so a large store never holds other
// requests (issue 30). Then the per-hour roll-ups that budgets and usage read are checked against
// the records, hour by hour (audit/rollup-check.ts): the chains do not cover them, and a mismatch
// fails the run as a chain break does. It runs in the background; the console shows the latest run. It is a
// convenience: it trusts this process, while `svc audit verify` on another machine with a
// pinned key trusts nothing the control plane says. One run per organization per process.
import { and, desc, eq, isNotNull } from "drizzle-orm";
import type { AdminActor } from "../../contract/admin-event.ts";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { trustCheckpoints } from "../../contract/verify/checkpoint-trust.ts";
import type { ExportLine } from "../../contract/stored-line.ts";
import { AuditVerifier } from "../../contract/verify/verifier.ts";
import { exportLines } from "../audit/export.ts";
import { checkRollups } from "../audit/rollup-check.ts";
import { type Db, nextTurn, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { ROLLUPS_EQUAL } from "./rollup-trust.ts";
import { listCheckpoints } from "./checkpoints.ts";
import { currentSigningKey, derivedPublicKeys } from "./signing-key.ts";
import { sealedRun } from "./verification-seal.ts";
import { TrailRuns, finishRun } from "./verify-trail.ts";

type Row = Awaited<ReturnType<typeof rowsOf>>[number];
async function rowsOf(db: Db, orgId: string) {
  const v = tables(db).auditVerifications;
  return db.select().from(v).where(eq(v.orgId, orgId)).orderBy(desc(v.startedAt)).limit(1);
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
function view(r: Row) {
  return {
    id: r.id,
    state: r.state,
    started_at: iso(r.startedAt)!,
    finished_at: iso(r.finishedAt),
    records: r.records,
    checkpoint: r.checkpoint,
    problems: r.problems,
    detail: r.detail,
    rollup_mismatches: r.rollupMismatches,
    rollup_detail: r.rollupDetail || null,
  };
}

export async function latestVerification(db: Db, orgId: string) {
  const [row] = await rowsOf(db, orgId);
  if (!row) throw new SvcError("not_found", "the control plane has not verified this organization's store yet; start a run with POST …/audit-verifications or the console's Verify now");
  return view(row);
}

/**
 * When the organization's latest sealed run (of any replica) started, or null when there is none.
 * Only a run whose seal holds (verification-seal.ts) counts: a row written into the store by
 * someone with database access ("running", dated now, or a finding's look-alike) could otherwise
 * postpone the schedule for a period at a time, again and again, while a roll-up they lowered
 * went unchecked. A run of an older release (unsealed) counts neither, so a sealed run is due at
 * once; a run in progress on another replica may then be doubled by this one (harmless). The
 * newest few sealed rows are read: forged ones above them make a run due, never skipped.
 */
export async function lastVerificationStart(db: Db, orgId: string): Promise<number | null> {
  const v = tables(db).auditVerifications;
  const rows = await db
    .select()
    .from(v)
    .where(and(eq(v.orgId, orgId), isNotNull(v.signature)))
    .orderBy(desc(v.startedAt), desc(v.id))
    .limit(8);
  const keys = derivedPublicKeys(orgId);
  return rows.map((r) => sealedRun(r, keys)).find((r) => r.sealed)?.startedAt ?? null;
}

const running = new Map<string, Promise<void>>();

/** Starts a run (or returns the one running) for `by` (a person's Verify now, or the schedule); resolves with the run as started. */
export async function startVerification(deps: ControlPlaneDeps, orgId: string, by: AdminActor) {
  const v = tables(deps.db).auditVerifications;
  if (running.has(orgId)) return latestVerification(deps.db, orgId);
  const id = newId("auditVerification", deps.now());
  const startedAt = deps.now();
  const [row] = await deps.db.insert(v).values({ id, orgId, startedAt, state: "running" }).returning();
  const run = { id, orgId, startedAt, by };
  const done = runVerification(deps, orgId)
    .then(async (r) => finishRun(deps, run, r))
    .catch(async (e: unknown) => {
      deps.log.error("audit store verification failed", { org_id: orgId, error: (e as Error).message });
      await finishRun(deps, run, { ...NOTHING_CHECKED, state: "failed", detail: (e as Error).message.slice(0, 500) }).catch(() => undefined);
    })
    .finally(() => running.delete(orgId));
  running.set(orgId, done);
  return view(row!);
}

const NOTHING_CHECKED = { records: 0, checkpoint: null, problems: 0, detail: null, rollupMismatches: 0, rollupDetail: null };

/** Waits for a run of this process to end (tests, shutdown). */
export async function verificationSettled(orgId: string): Promise<void> {
  await running.get(orgId);
}

async function runVerification(deps: ControlPlaneDeps, orgId: string) {
  const key = await currentSigningKey(deps.db, deps.kms, orgId, deps.log);
  const list = await listCheckpoints(deps, orgId);
  const trust = key ? trustCheckpoints(list.checkpoints, { pinned: key.publicKey, named: key.publicKey, orgId, saved: null }) : null;
  if (trust?.keyChange)
    return {
      ...NOTHING_CHECKED,
      state: "tampered" as const,
      problems: 1,
      detail: `the checkpoints are signed by ${trust.keyChange.latest}, not by the key the control plane holds (${key!.publicKey}), and no checkpoint hands over to it`,
    };
  const verifier = new AuditVerifier(trust?.trusted ?? null);
  const trail = new TrailRuns();
  for await (const page of exportLines(deps.db, orgId, "chain")) {
    for (const line of page) {
      verifier.add(line as unknown as ExportLine);
      trail.add(line as unknown as ExportLine);
    }
    await nextTurn();
  }
  const report = verifier.finish();
  const trailProblem = await trail.problem(deps.db, orgId);
  const rollups = await checkRollups(deps.db, orgId);
  const problems = [...(trust?.problems ?? []), ...report.problems, ...(trailProblem ? [{ detail: trailProblem }] : []), ...rollups.first];
  const state = problems.length > 0 ? ("tampered" as const) : report.state;
  const first = problems[0]?.detail ?? (state === "unsigned" ? `${report.uncovered + report.awaiting_adoption} records are chained and not yet signed` : null);
  if (rollups.mismatches > 0) deps.log.warn("audit roll-ups differ from the records", { org_id: orgId, mismatches: rollups.mismatches, first: rollups.first[0]!.detail });
  return {
    state,
    records: report.records,
    problems: (trust?.problems.length ?? 0) + report.problems_total + (trailProblem ? 1 : 0) + rollups.mismatches,
    checkpoint: report.checkpoint?.number ?? null,
    detail: first,
    rollupMismatches: rollups.mismatches,
    rollupDetail: rollups.first[0]?.detail ?? ROLLUPS_EQUAL,
  };
}
