// Whether the per-hour roll-ups (rollups.ts) still equal the records they stand for. Budgets and
// `svc usage` read the roll-ups, and the store chains do not cover them: someone with write
// access to the database could lower a count in audit_hourly_usage (or mark counted rows
// pending) and widen every budget while every record still verifies. The control plane's own
// verification (audit-chain/verify-store.ts) therefore checks them against the records, hour by
// hour, as the fill migration counts them: tool and model calls made for a person (no task) for
// audit_hourly_calls, model calls' outcome records for audit_hourly_usage, pending rows left out.
// The comparison itself is pure (rollup-compare.ts).
//
// Never a long hold (issue 30): an hour is summed in slices of at most `slice` index entries
// (SLICE), each its own statement with a turn of the event loop after it. Three scans: the
// tool and the model decisions along (org, kind, id) over the ids the hour's times allow
// (bounds.ts), the outcomes along the partial index audit_org_model_outcome_ts over the hour's
// times; each slice ends at the entry `slice` further on (an index-only OFFSET read). The last
// slice of each scan is open-ended and read in one transaction with the hour's roll-up rows.
// An hour of fewer entries than a slice is therefore read exactly as before, in one transaction.
// (Sizing slices from the roll-up totals would miss that the id range of a quiet hour reaches an
// hour into each neighbour, which may be the busy one; counting entries bounds the real work.)
//
// Consistency without one long transaction. Every change to counted records changes their
// roll-up rows in the same transaction: ingest adds (rollups.ts), the fold marks pending rows
// counted and adds them (rollup-fold.ts), retention takes deleted rows away and removes rows
// left at zero (retention.ts; a pending row it deletes was never counted and is in no sum here
// either). Nothing else writes the fields the roll-ups key or sum (ingest completes a decision's
// outcome column, adoption its store-chain columns). So a key whose roll-up rows read the same
// before the slices (A) and with the last slices (B) had no counted record added, removed or
// re-marked in between, unless changes netted to zero (one record in, another of the same key
// out). Per hour:
// - no difference: equal (the usual case, also while ingest writes the hour: new records carry
//   new ids and current times, so they land in the last, open-ended slices read with B);
// - a difference on a key whose roll-up moved between A and B: the slices may have summed it
//   half before, half after (a late record, a retention cut): read again, up to PASSES times;
// - a difference on a key that did not move, or one still moving after PASSES: confirmed by
//   reading the whole hour in one transaction before it is reported. A false "tampered" is worse
//   than one long read, which happens only when something is wrong (or that netted change).
// Tampering that lowers a key by exactly what concurrent, netted-out changes hid from the slices
// can pass one run; the chains do not let that be arranged from outside, and the next run sees it.
import { and, asc, eq, gt, gte, isNull, lt, sql, sum, count } from "drizzle-orm";
import { idFloor } from "../../contract/ids.ts";
import { type Db, nextTurn, tables } from "../db/index.ts";
import { ID_TIME_SLACK_MS, idBounds } from "./bounds.ts";
import { CALLS_KEY, type HourSums, type RollupMismatch, USAGE_KEY, addGroup, compareHour, emptySums, movedDuring } from "./rollup-compare.ts";
import { HOUR } from "./rollups.ts";

/** What a check found, and how it read: slices summed, sliced reads of an hour done again, hours read whole to confirm a difference. */
export type RollupCheck = { hours: number; mismatches: number; first: RollupMismatch[]; slices: number; rereads: number; wholeReads: number };
/** `slice`: entries per slice (tests use a few); `between`: awaited after each slice besides the turn (tests change the store there). */
type Options = { slice: number; between?: () => Promise<void> };

/** Mismatches kept with their detail; the rest are only counted. */
const KEPT = 20;
/**
 * Index entries per slice. 5,000, not 20,000: a slice of 20,000 decisions summed in 101–143 ms
 * on a file store under load (bench/audit-scale.ts at 1M with an hour of 400,000 records), above
 * the 100 ms a request may wait; the extra slices cost little (docs/performance.md).
 */
const SLICE = 5_000;
/** Sliced reads of an hour whose keys moved meanwhile, before one transaction decides. */
const PASSES = 3;

/** The three scans of an hour, and where one slice of a scan starts: an id for the decisions, a time for the outcomes. */
type Scan = "tool" | "model" | "outcome";
const SCANS: readonly Scan[] = ["tool", "model", "outcome"];
type From = Record<Scan, string | number>;

/** What one scan reads of an hour: its index range and the rows it counts. */
function scanOf(db: Db, orgId: string, hour: number, scan: Scan) {
  const a = tables(db).auditRecords;
  const inHour = [gte(a.ts, hour), lt(a.ts, hour + HOUR), sql`${a.rollupPending} IS NOT TRUE`];
  if (scan === "outcome")
    // kind and action as literals: the partial index audit_org_model_outcome_ts (usage.ts).
    return { by: a.ts, end: hour + HOUR, index: [eq(a.orgId, orgId), sql`${a.kind} = 'outcome'`, sql`${a.action} = 'model:invoke'`], counted: inHour };
  // kind as a literal: the (org, kind, id) index, read over the hour's id range (bounds.ts).
  return { by: a.id, end: idBounds(hour, hour + HOUR - 1).below!, index: [eq(a.orgId, orgId), sql`${a.kind} = ${sql.raw(`'${scan}'`)}`], counted: [isNull(a.task), ...inHour] };
}

/** Where the slice of `scan` from `from` ends: the entry `slice` further on, or null when fewer are left. */
async function sliceEnd(db: Db, orgId: string, hour: number, scan: Scan, from: string | number, slice: number): Promise<string | number | null> {
  const s = scanOf(db, orgId, hour, scan);
  const a = tables(db).auditRecords;
  const [row] = await db
    .select({ at: s.by })
    .from(a)
    .where(and(...s.index, gte(s.by, from), lt(s.by, s.end)))
    .orderBy(asc(a.orgId), ...(scan === "outcome" ? [] : [asc(a.kind)]), asc(s.by))
    .limit(1)
    .offset(slice);
  if (!row) return null;
  // more than a slice of outcomes in one millisecond: that millisecond is the slice
  return row.at === from ? (from as number) + 1 : row.at;
}

/** Adds the counted records of `scan` from `from` to `to` (null: the scan's end) to `into`. */
async function sumSlice(db: Db, orgId: string, hour: number, scan: Scan, from: string | number, to: string | number | null, into: HourSums): Promise<void> {
  const s = scanOf(db, orgId, hour, scan);
  const a = tables(db).auditRecords;
  const where = and(...s.index, gte(s.by, from), lt(s.by, to ?? s.end), ...s.counted);
  if (scan !== "outcome") {
    const rows = await db.select({ decision: a.decision, toolName: a.toolName, userId: a.userId, calls: count() }).from(a).where(where).groupBy(a.decision, a.toolName, a.userId);
    for (const r of rows) addGroup(into.calls, CALLS_KEY, [scan, r.decision, r.toolName, r.userId], { calls: Number(r.calls) });
    return;
  }
  const rows = await db
    .select({
      userId: a.userId,
      model: a.model,
      agentId: a.agentId,
      replicaId: a.replicaId,
      calls: count(),
      prompt: sum(a.promptTokens).mapWith(Number),
      completion: sum(a.completionTokens).mapWith(Number),
      cost: sum(a.cost).mapWith(Number),
    })
    .from(a)
    .where(where)
    .groupBy(a.userId, a.model, a.agentId, a.replicaId);
  for (const r of rows)
    addGroup(into.usage, USAGE_KEY, [r.userId, r.model, r.agentId, r.replicaId], { calls: Number(r.calls), prompt_tokens: r.prompt ?? 0, completion_tokens: r.completion ?? 0, cost: r.cost ?? 0 });
}

/** The hour's roll-up rows, read by their key. */
async function readRollups(db: Db, orgId: string, hour: number): Promise<HourSums> {
  const { auditHourlyCalls: hc, auditHourlyUsage: hu } = tables(db);
  const out = emptySums();
  for (const r of await db
    .select()
    .from(hc)
    .where(and(eq(hc.orgId, orgId), eq(hc.hour, hour))))
    addGroup(out.calls, CALLS_KEY, [r.kind, r.decision, r.toolName, r.userId], { calls: r.calls });
  for (const r of await db
    .select()
    .from(hu)
    .where(and(eq(hu.orgId, orgId), eq(hu.hour, hour))))
    addGroup(out.usage, USAGE_KEY, [r.userId, r.model, r.agentId, r.replicaId], { calls: r.calls, prompt_tokens: r.promptTokens, completion_tokens: r.completionTokens, cost: r.cost });
  return out;
}

/** The rest of each scan from `from`, and the roll-ups, in one transaction: `records` completed, the roll-ups as they stand. */
async function readRest(db: Db, orgId: string, hour: number, from: From, records: HourSums): Promise<HourSums> {
  return db.transaction(async (tx) => {
    for (const scan of SCANS) await sumSlice(tx, orgId, hour, scan, from[scan], null, records);
    return readRollups(tx, orgId, hour);
  });
}

const scanStarts = (hour: number): From => ({ tool: idBounds(hour, null).min!, model: idBounds(hour, null).min!, outcome: hour });

/** One read of the hour: the roll-ups (A), the slices, the last slices with the roll-ups again (B). */
async function slicedRead(db: Db, orgId: string, hour: number, o: Options) {
  const before = await readRollups(db, orgId, hour);
  const records = emptySums();
  const from = scanStarts(hour);
  let slices = 0;
  for (const scan of SCANS) {
    for (let end = await sliceEnd(db, orgId, hour, scan, from[scan], o.slice); end !== null; end = await sliceEnd(db, orgId, hour, scan, from[scan], o.slice)) {
      await sumSlice(db, orgId, hour, scan, from[scan], end, records);
      from[scan] = end;
      slices++;
      await nextTurn();
      await o.between?.();
    }
  }
  const after = await readRest(db, orgId, hour, from, records);
  return { records, before, after, slices };
}

/** One hour's mismatches, read in slices and confirmed as the top of this file says. */
async function checkHour(db: Db, orgId: string, hour: number, o: Options, tally: RollupCheck): Promise<RollupMismatch[]> {
  for (let pass = 0; pass < PASSES; pass++) {
    if (pass > 0) tally.rereads++;
    const read = await slicedRead(db, orgId, hour, o);
    tally.slices += read.slices;
    const found = compareHour(orgId, hour, read.records, read.after);
    // no slice before the last: the whole hour was one transaction
    if (found.length === 0 || read.slices === 0) return found;
    if (!movedDuring(found, read.before, read.after)) break;
    await nextTurn();
  }
  tally.wholeReads++;
  const records = emptySums();
  const rollups = await readRest(db, orgId, hour, scanStarts(hour), records);
  return compareHour(orgId, hour, records, rollups);
}

/**
 * The next hour after `after` (null: the first) that a roll-up row or a record may fall in: the
 * roll-ups' next hours by their key, the records' by the first id that can be dated after it.
 * Every hour holding either is reached; an empty one costs a step at most.
 */
async function nextHour(db: Db, orgId: string, after: number | null): Promise<number | null> {
  const { auditRecords: a, auditHourlyCalls: hc, auditHourlyUsage: hu } = tables(db);
  const candidates: number[] = [];
  for (const t of [hc, hu]) {
    const [row] = await db
      .select({ hour: t.hour })
      .from(t)
      .where(and(eq(t.orgId, orgId), after === null ? undefined : gt(t.hour, after)))
      .orderBy(asc(t.orgId), asc(t.hour))
      .limit(1);
    if (row) candidates.push(Number(row.hour));
  }
  const from = after === null ? null : idFloor("auditRecord", after + HOUR - ID_TIME_SLACK_MS);
  const [rec] = await db
    .select({ ts: a.ts })
    .from(a)
    .where(and(eq(a.orgId, orgId), from === null ? undefined : gte(a.id, from)))
    .orderBy(asc(a.orgId), asc(a.id))
    .limit(1);
  if (rec) candidates.push(Math.max(Math.floor(Number(rec.ts) / HOUR) * HOUR, after === null ? -Infinity : after + HOUR));
  return candidates.length === 0 ? null : Math.min(...candidates);
}

/** Checks every hour of the organization's roll-ups against its records (see the top of this file). */
export async function checkRollups(db: Db, orgId: string, o: Partial<Options> = {}): Promise<RollupCheck> {
  const result: RollupCheck = { hours: 0, mismatches: 0, first: [], slices: 0, rereads: 0, wholeReads: 0 };
  for (let hour = await nextHour(db, orgId, null); hour !== null; hour = await nextHour(db, orgId, hour)) {
    const found = await checkHour(db, orgId, hour, { ...o, slice: o.slice ?? SLICE }, result);
    result.hours++;
    result.mismatches += found.length;
    for (const m of found) if (result.first.length < KEPT) result.first.push(m);
    await nextTurn();
  }
  return result;
}
