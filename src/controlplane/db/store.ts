// What the rest of the control plane sees of storage: a drizzle database and its tables.
// Services are written once, in the part of drizzle both dialects run (db/README.md), and
// typed against the PostgreSQL tables; each table is declared once for both (table.ts).
import type { BunSQLQueryResultHKT } from "drizzle-orm/bun-sql";
import type { PgDatabase } from "drizzle-orm/pg-core";
import type * as schema from "./schema.ts";

export type Tables = typeof schema;

/** A database or an open transaction: both run queries; `transaction()` on a database retries conflicts. */
export type Db = PgDatabase<BunSQLQueryResultHKT, Tables>;

export type Dialect = "sqlite" | "postgres";

/** Called with every statement drizzle sends (text and parameters): tests read query plans with it (audit/plans.test.ts). */
export type QueryLog = (text: string, params: readonly unknown[]) => void;

export type Store = {
  db: Db;
  dialect: Dialect;
  /** The SQLite file or the PostgreSQL URL without its password, for logs. */
  location: string;
  /** Applies pending migrations; returns how many were applied. */
  migrate(): Promise<number>;
  close(): Promise<void>;
};

/** The tables of the store `db` (or its transaction) belongs to. */
export function tables(db: Db): Tables {
  return (db as unknown as { _: { fullSchema: Tables } })._.fullSchema;
}

/** Rows changed by an insert, update or delete without `returning()`. */
export function rowCount(result: unknown): number {
  return (result as { count?: number } | null)?.count ?? 0;
}
