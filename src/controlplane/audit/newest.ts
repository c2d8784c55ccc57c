// Newest first for the filters whose index is not in id order (issue 30): a tool prefix is a
// range of the tool index, and a policy is found in two partial indexes (enforced or shadow).
// Sorting everything such a filter matches for one page costs as much as the filter is common;
// walking the organization's ids until the page is full costs as much as it is rare. So a page
// is read in two steps: first among the newest PROBE records (a walk of the (org, id) index that
// fills the page of a common filter), then, only if the page is not full, from the filter's own
// index below them, where what is left to sort is what a rare filter matches.
import { and, desc, gte, lt, type SQL } from "drizzle-orm";
import { type Db, tables } from "../db/index.ts";

const PROBE = 2000;

/**
 * Up to `want` rows, newest first. `read(extra, limit)`: the search's rows with more conditions,
 * newest first; `span`: the organization, the cursor and the time filters' id bounds alone, where
 * the newest records are counted.
 */
export async function newestInTwoSteps<R>(db: Db, want: number, span: SQL[], read: (extra: SQL[], limit: number) => Promise<R[]>, probe = PROBE): Promise<R[]> {
  const a = tables(db).auditRecords;
  // the id `probe` records below the cursor: one walk of the (org, id) index
  const [edge] = await db
    .select({ id: a.id })
    .from(a)
    .where(and(...span))
    .orderBy(desc(a.id))
    .limit(1)
    .offset(probe);
  if (!edge) return read([], want);
  const recent = await read([gte(a.id, edge.id)], want);
  if (recent.length >= want) return recent;
  return [...recent, ...(await read([lt(a.id, edge.id)], want - recent.length))];
}
