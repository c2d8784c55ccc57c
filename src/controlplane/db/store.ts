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

/**
 * A transaction whose commit may return before it is on disk: on SQLite, the commit does not
 * fsync the WAL (synchronous NORMAL for this transaction only); it is on disk at the next
 * commit that does (any other, all of them in order) or the checkpoint worker's sync of the WAL,
 * and a power cut before that loses it whole (never half of it, never one after it). For work
 * that is done again when lost, such as retention's batches: the fsync is otherwise on the event
 * loop (bun:sqlite is synchronous), where at 1M records retention's commits took 50–170 ms
 * under the checkpoints' writes and held every request meanwhile (docs/performance.md).
 * PostgreSQL's commit never holds the event loop: an ordinary transaction there.
 */
export async function relaxedTransaction<T>(db: Db, body: (tx: Db) => Promise<T>): Promise<T> {
  return db.transaction(body, RELAXED);
}

/** The marker sqlite.ts's transaction looks for; PostgreSQL's ignores what it does not know. */
const RELAXED = { relaxed: true } as unknown as Parameters<Db["transaction"]>[1];

/** A statement written by hand: `?` placeholders on SQLite, `$1…` on PostgreSQL. */
export type Statement = { text: string; params: unknown[] };

/** Placeholders numbered in order of use: `$1`, `$2`… on PostgreSQL, `?` on SQLite. */
export function placeholders(dialect: Dialect): () => string {
  let n = 0;
  return () => (dialect === "postgres" ? `$${++n}` : "?");
}

/** A statement written by hand, run on the store's own client. */
export type RawStatements = {
  dialect: Dialect;
  /**
   * Rows as arrays of column values, in the statement's order. On PostgreSQL the statement is
   * sent at once, so statements started one after the other in a transaction travel together
   * (pipelined) and run in that order: one round trip for all.
   */
  rows(text: string, params: unknown[]): Promise<unknown[][]>;
  /**
   * A transaction's last statements, run in order, and its commit: on PostgreSQL the COMMIT
   * travels with them (one round trip, postgres.ts); on SQLite the transaction commits when its
   * body returns. A failing statement fails them all and the transaction. Nothing may be sent
   * on the transaction after. Returns each statement's rows.
   */
  finish(statements: readonly Statement[]): Promise<unknown[][][]>;
};

/**
 * PostgreSQL transactions' connections (postgres.ts) and how each sends statements with its
 * COMMIT behind them; a connection not in here (SQLite, or no transaction) runs them in turn.
 */
export const pipelinedCommits = new WeakMap<object, (statements: readonly Statement[]) => Promise<unknown[][][]>>();

/**
 * The client under drizzle (the transaction's own connection when `db` is one: PostgreSQL's
 * reserved Bun.SQL connection, or SQLite's proxy callback behind the transaction gate), for the
 * few hot paths where drizzle's query building and row mapping cost more than the database's
 * own work (audit ingest's batch, the 304 poll's revision read), or where round trips count
 * (audit ingest's transaction holds its organization's store head: audit/ingest.ts). Each
 * dialect's text is prepared once by its driver (bun:sqlite's statement cache, Bun.SQL's named
 * statements).
 */
export function rawStatements(db: Db): RawStatements {
  const client = (db as unknown as { session: { client: { unsafe?: unknown } } }).session.client;
  if (typeof client.unsafe === "function") {
    // execute(): sent now, not when first awaited, so statements go out in the order started
    const pg = client as { unsafe(text: string, params: unknown[]): { values(): { execute(): PromiseLike<unknown[][]> } } };
    const rows = async (text: string, params: unknown[]) => pg.unsafe(text, params).values().execute();
    const commit = pipelinedCommits.get(client);
    return { dialect: "postgres", rows, finish: async (statements) => (commit ? commit(statements) : inTurn(rows, statements)) };
  }
  const sqlite = client as unknown as (text: string, params: unknown[], method: "all") => Promise<{ rows: unknown[][] }>;
  const rows = async (text: string, params: unknown[]) => (await sqlite(text, params, "all")).rows;
  return { dialect: "sqlite", rows, finish: async (statements) => inTurn(rows, statements) };
}

async function inTurn(rows: RawStatements["rows"], statements: readonly Statement[]): Promise<unknown[][][]> {
  const out: unknown[][][] = [];
  for (const s of statements) out.push(await rows(s.text, s.params));
  return out;
}

/**
 * Lets other requests in between the slices of a long operation (export, verification,
 * retention, adoption): a turn of the event loop, not a microtask. bun:sqlite is synchronous
 * and its statements are awaited as settled promises, so a loop of them never reaches the
 * event loop's timers and sockets: a 1M-record export held every poll for its whole run
 * (issue 30). One turn lets the waiting requests' statements run before the next slice.
 */
export async function nextTurn(): Promise<void> {
  return new Promise((resume) => setImmediate(resume));
}
