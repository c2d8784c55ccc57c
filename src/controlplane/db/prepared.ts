// A select drizzle prepared once (`.prepare(name)`, with `sql.placeholder(name)` for what changes
// between runs), run for the driver's own rows, unmapped: on a long read drizzle's generic row
// mapping cost about three times SQLite's read (issue 30), so such a read names and decodes its
// few columns itself (audit/page-query.ts). Both drivers' prepared queries offer their rows
// through public methods: drizzle's SQLite proxy (bun:sqlite, sqlite.ts) `values()`, arrays in
// the select's order; Bun.SQL's (postgres.ts) `all()`, objects by column name, as Bun.SQL
// decodes them (a bigint as text, jsonb parsed, bytea a Buffer).
import { is } from "drizzle-orm";
import { BunSQLPreparedQuery } from "drizzle-orm/bun-sql";
import type { PgPreparedQuery, PreparedQueryConfig } from "drizzle-orm/pg-core";
import { SQLitePreparedQuery } from "drizzle-orm/sqlite-core";
import type { Dialect } from "./store.ts";

/** A page of driver rows: SQLite's as arrays in the select's order, PostgreSQL's as objects by column name. */
export type DriverRows = { dialect: Extract<Dialect, "sqlite">; rows: unknown[][] } | { dialect: Extract<Dialect, "postgres">; rows: Record<string, unknown>[] };

/** Runs `prepared` (what `.prepare(name)` of a select on a `Db` returns) with the placeholders' values. */
export function driverRows(prepared: PgPreparedQuery<PreparedQueryConfig>): (values: Record<string, unknown>) => Promise<DriverRows> {
  // The store types every query as PostgreSQL's (store.ts); on SQLite the object is the SQLite driver's.
  const query: unknown = prepared;
  if (is(query, SQLitePreparedQuery)) return async (values) => ({ dialect: "sqlite", rows: (await query.values(values)) as unknown[][] });
  if (is(query, BunSQLPreparedQuery)) return async (values) => ({ dialect: "postgres", rows: (await query.all(values)) as Record<string, unknown>[] });
  throw new Error("driverRows: a prepared query of neither store's driver (db/sqlite.ts, db/postgres.ts)");
}
