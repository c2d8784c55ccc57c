// A page query built once and run many times, for the long reads (the export in chain order):
// drizzle writes the statement's text once, with placeholders for what changes between pages
// (the cursor), and each page runs that text on the store's own client (db/store.ts
// rawStatements) and turns each row into an object with the selected columns' own decoders, as
// drizzle itself does. Building the 47-column select for every page of 250 rows and drizzle's
// generic row mapping cost more than SQLite's own read: 9.4 against 2.9 µs a row (issue 30,
// docs/performance.md, 2026-11-28).
import { Column, fillPlaceholders } from "drizzle-orm";
import { type Db, rawStatements } from "../db/index.ts";

/**
 * `query` is drizzle's query (a select of `columns`, in their order) with `sql.placeholder(name)`
 * for each value of `run`'s argument.
 */
export function pageQuery<Q extends PromiseLike<unknown[]> & { toSQL(): { sql: string; params: unknown[] } }>(
  db: Db,
  columns: Record<string, Column>,
  query: Q,
): (values: Record<string, unknown>) => Promise<Awaited<Q>> {
  const { sql: text, params } = query.toSQL();
  const raw = rawStatements(db);
  const keys = Object.keys(columns);
  // a column whose driver value is its value (text, most integers) is not called at all
  const decoders = Object.values(columns).map((c) => (c.mapFromDriverValue === Column.prototype.mapFromDriverValue ? null : c));
  // drizzle's logger sees the statement as if drizzle had sent it (audit/plans.test.ts reads its plan)
  const logger = (db as unknown as { session?: { logger?: { logQuery(text: string, params: unknown[]): void } } }).session?.logger;
  return async (values): Promise<Awaited<Q>> => {
    const filled = fillPlaceholders(params, values);
    logger?.logQuery(text, filled);
    const rows = await raw.rows(text, filled);
    const out: unknown[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i]!;
      const o: Record<string, unknown> = {};
      for (let c = 0; c < keys.length; c++) {
        const v = row[c];
        const decoder = decoders[c];
        o[keys[c]!] = v === null || v === undefined ? null : decoder ? decoder.mapFromDriverValue(v) : v;
      }
      out[i] = o;
    }
    return out as never;
  };
}
