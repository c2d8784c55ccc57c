// Newest first through growing windows of time (issue 30). A tool prefix is a range of the tool
// index, and a policy is found in two partial indexes (enforced or shadow): neither keeps its
// rows in id order, so the newest page of a filter that matches a million records would sort
// them all. Such a search reads the time-ordered ids (bounds.ts) in windows that grow eightfold
// from an hour (8 hours, 3 days, 3 weeks, …), each sorting only its own rows, and stops once the
// page is full, the filter's own time bound is passed, or the organization's oldest record is.
import { and, asc, desc, eq, gte, lt, type SQL } from "drizzle-orm";
import { idFloor, idTime } from "../../contract/ids.ts";
import { type Db, tables } from "../db/index.ts";
import { ID_TIME_SLACK_MS } from "./bounds.ts";
import { type Row, viewColumns } from "./query.ts";

const FIRST_WINDOW_MS = 3_600_000;
const GROWTH = 8;

/**
 * Up to `want` rows matching `conds`, newest first, dated before `before` (ms; a cursor's time
 * or the clock's reach) and from `from` on (null: no lower bound).
 */
export async function newestInWindows(db: Db, orgId: string, conds: SQL[], want: number, span: { before: number; from: number | null; now: number }): Promise<Row[]> {
  const a = tables(db).auditRecords;
  // ids are made within the slack of their records' times (bounds.ts); without a time filter, the
  // organization's oldest record is the floor (one index entry, read only when a window fell short)
  let floor = span.from === null ? null : span.from - ID_TIME_SLACK_MS;
  const oldest = async () => {
    const [row] = await db.select({ id: a.id }).from(a).where(eq(a.orgId, orgId)).orderBy(asc(a.id)).limit(1);
    return row ? (idTime(row.id) ?? 0) : Infinity;
  };
  const out: Row[] = [];
  let upper = span.before;
  // the first window reaches from the clock (or the cursor) back an hour, and up to `before`
  let lower = Math.min(upper, span.now) - FIRST_WINDOW_MS;
  for (let size = FIRST_WINDOW_MS; out.length < want; size *= GROWTH, upper = lower, lower -= size) {
    if (floor === null && upper < span.now - FIRST_WINDOW_MS) floor = await oldest();
    if (floor !== null && upper <= floor) break;
    // ids made in [lower, upper): consecutive windows neither overlap nor leave a gap
    const window = [lt(a.id, idFloor("auditRecord", upper)), ...(floor === null || lower > floor ? [gte(a.id, idFloor("auditRecord", lower))] : [])];
    const rows = await db
      .select(viewColumns(a))
      .from(a)
      .where(and(...conds, ...window))
      .orderBy(desc(a.id))
      .limit(want - out.length);
    out.push(...rows);
    if (floor !== null && lower <= floor) break;
  }
  return out;
}
