// A page query prepared once and run many times, for the long reads (the export in chain order):
// drizzle builds and prepares the select once, with `sql.placeholder(name)` for what changes
// between pages (the cursor); each page takes the driver's rows unmapped (db/prepared.ts) and
// turns them into objects here, decoding only the columns the caller names for each store.
// Building the 47-column select for every page of 250 rows and drizzle's generic row mapping
// cost more than SQLite's own read: 9.4 against 2.9 µs a row (issue 30, docs/performance.md,
// 2026-11-28).
import type { Column } from "drizzle-orm";
import type { PgPreparedQuery, PreparedQueryConfig } from "drizzle-orm/pg-core";
import { type Dialect, driverRows } from "../db/index.ts";

/**
 * For each store, the selected columns whose driver value is not their value, and how to decode
 * it (never called with null). A column left out is taken as the driver gives it: the page's
 * test compares the rows with drizzle's own select on both stores (page-query.test.ts).
 */
export type Decoders<K extends string> = Record<Dialect, Partial<Record<K, (v: unknown) => unknown>>>;

/**
 * `query` is drizzle's select of `columns` (in their order), with `sql.placeholder(name)` for
 * each value `run` is given; `name` names the prepared statement.
 */
export function pageQuery<C extends Record<string, Column>, Q extends PromiseLike<unknown[]> & { prepare(name: string): PgPreparedQuery<PreparedQueryConfig> }>(
  name: string,
  columns: C,
  query: Q,
  decoders: Decoders<keyof C & string>,
): (values: Record<string, unknown>) => Promise<Awaited<Q>> {
  const run = driverRows(query.prepare(name));
  const keys = Object.keys(columns);
  const names = keys.map((k) => columns[k]!.name);
  const decoding = (dialect: Dialect) => keys.map((k) => decoders[dialect][k as keyof C & string] ?? null);
  const decode = { sqlite: decoding("sqlite"), postgres: decoding("postgres") };
  return async (values): Promise<Awaited<Q>> => {
    const page = await run(values);
    const rows = page.rows;
    const decoder = decode[page.dialect];
    const out: Record<string, unknown>[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) {
      // SQLite's row is an array in the select's order, PostgreSQL's an object by column name
      const row = rows[i]! as Record<string | number, unknown>;
      const o: Record<string, unknown> = {};
      for (let c = 0; c < keys.length; c++) {
        const v = row[page.dialect === "sqlite" ? c : names[c]!];
        const d = decoder[c];
        o[keys[c]!] = v === null || v === undefined ? null : d ? d(v) : v;
      }
      out[i] = o;
    }
    // the select's own row type: each column's value, as drizzle's select would give it
    return out as never;
  };
}
