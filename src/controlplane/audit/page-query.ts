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
  const maker = (dialect: Dialect) => rowMaker(keys, dialect === "sqlite" ? keys.map((_, c) => c) : names, decoders[dialect]);
  const make = { sqlite: maker("sqlite"), postgres: maker("postgres") };
  return async (values): Promise<Awaited<Q>> => {
    const page = await run(values);
    const rows: readonly unknown[] = page.rows;
    const row = make[page.dialect];
    const out: Record<string, unknown>[] = new Array(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = row(rows[i]);
    // the select's own row type: each column's value, as drizzle's select would give it
    return out as never;
  };
}

/**
 * The function that turns one driver row into the select's object, written once per query as
 * one object literal: `{ id: r[0] ?? null, ts: r[1] == null ? null : d.ts(r[1]), … }` (`r[0]`
 * on SQLite's arrays, `r["id"]` on PostgreSQL's objects). Every row then has one shape from its
 * first property on; a loop assigning the 46 keys one by one cost 1.5–2 µs a row, about a sixth
 * of the export's serving cost (issue 30, docs/performance.md). The source is made of the
 * select's own keys and column names (the schema's, JSON-quoted), never of data.
 */
function rowMaker(keys: readonly string[], sources: readonly (string | number)[], decoders: Partial<Record<string, (v: unknown) => unknown>>): (row: unknown) => Record<string, unknown> {
  const fields = keys.map((k, c) => {
    const at = `r[${JSON.stringify(sources[c])}]`;
    return `${JSON.stringify(k)}: ${decoders[k] ? `${at} == null ? null : d[${JSON.stringify(k)}](${at})` : `${at} ?? null`}`;
  });
  const make = new Function("d", `return (r) => ({ ${fields.join(", ")} });`) as (d: typeof decoders) => (row: unknown) => Record<string, unknown>;
  return make(decoders);
}
