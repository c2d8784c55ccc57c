// The embedded store: one SQLite file (WAL, full sync, foreign keys) through drizzle's async
// SQLite driver, so services await it exactly as they await PostgreSQL. bun:sqlite itself is
// synchronous; the gate keeps other requests' statements out of an open transaction. WAL
// checkpoints run in a worker thread with a connection of its own (checkpointer.ts), never in a
// request's commit.
import { chmodSync, existsSync, writeFileSync } from "node:fs";
import { Database } from "bun:sqlite";
import { drizzle } from "drizzle-orm/sqlite-proxy";
import type { Logger } from "../../log/index.ts";
import { BACKSTOP_PAGES, Checkpointer } from "./checkpointer.ts";
import { type Migration, embeddedMigrations } from "./embedded-migrations.ts";
import { TransactionGate } from "./gate.ts";
import { MIGRATIONS } from "./migrations/index.ts";
import { HISTORY_DDL, type HistoryRow, StoreFromNewerRelease, historyRow, unknownMigrations } from "./schema-history.ts";
import * as schema from "./schema.ts";
import { sqliteSchemaOf } from "./table.ts";
import type { Db, QueryLog, Store } from "./store.ts";

type Method = "run" | "all" | "values" | "get";
type Params = (string | number | bigint | boolean | null | Uint8Array)[];

/** The database file's mode; SQLite gives its -wal and -shm files the same. */
export const DB_FILE_MODE = 0o600;

export type SqliteOptions = { logQuery?: QueryLog; checkpointEveryMs?: number; log?: Pick<Logger, "error"> };

/** A SQLite store, and its checkpoint worker (none for ":memory:"). */
export type SqliteStore = Store & { checkpointer: Checkpointer | null };

export function openSqlite(path: string, options: SqliteOptions = {}): SqliteStore {
  const { logQuery } = options;
  if (path !== ":memory:") {
    // Created (or tightened) 0600 before SQLite opens it: it holds hashes, wrapped keys and audit data.
    if (!existsSync(path)) writeFileSync(path, "", { mode: DB_FILE_MODE });
    for (const file of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(file)) chmodSync(file, DB_FILE_MODE);
  }
  const client = new Database(path, { create: true, strict: true });
  client.exec("PRAGMA journal_mode = WAL");
  client.exec("PRAGMA synchronous = FULL");
  client.exec("PRAGMA foreign_keys = ON");
  client.exec("PRAGMA busy_timeout = 5000");
  const gate = new TransactionGate();
  // A file's checkpoints run in a worker (checkpointer.ts), which has writes held (never reads)
  // for a last pass when the WAL must start again; this connection's only past the backstop.
  const checkpointer = path === ":memory:" ? null : new Checkpointer(path, { everyMs: options.checkpointEveryMs, log: options.log, holdWrites: async (body) => gate.between(body) });
  if (checkpointer) client.exec(`PRAGMA wal_autocheckpoint = ${BACKSTOP_PAGES}`);

  // The shapes drizzle's SQLite proxy expects: rows as arrays of values ("get": one such row,
  // or undefined); "run" carries the changed-row count where rowCount() looks for it.
  const execute = (text: string, params: Params, method: Method): { rows: unknown[]; count?: number } => {
    const statement = client.query<Record<string, unknown>, Params>(text);
    if (method === "run") return { rows: [], count: statement.run(...params).changes };
    const rows = statement.values(...params);
    return { rows: (method === "get" ? rows[0] : rows) as unknown[] };
  };
  const orm = drizzle(async (text, params, method) => gate.statement(() => execute(text, params as Params, method)), { schema: sqliteSchemaOf(schema), ...(logQuery ? { logger: { logQuery } } : {}) });

  // Transactions go through the gate; BEGIN IMMEDIATE takes the write lock at once, so a
  // transaction never fails half-way for want of it. A relaxed one (store.ts relaxedTransaction)
  // commits without the WAL's fsync; FULL is back before any other statement runs.
  const transaction = orm.transaction.bind(orm);
  Object.assign(orm, {
    transaction: async (body: (tx: unknown) => Promise<unknown>, config?: { relaxed?: boolean }) => {
      if (gate.inside()) throw new Error("a transaction was opened on the database inside another transaction: use the transaction's own tx.transaction()");
      return gate.exclusive(async () => {
        if (!config?.relaxed) return transaction(body as never, { behavior: "immediate" });
        client.exec("PRAGMA synchronous = NORMAL");
        try {
          return await transaction(body as never, { behavior: "immediate" });
        } finally {
          client.exec("PRAGMA synchronous = FULL");
        }
      });
    },
  });

  const db = orm as unknown as Db;
  return {
    db,
    dialect: "sqlite",
    location: path,
    async migrate() {
      return gate.exclusive(async () => applyMigrations(client, embeddedMigrations(MIGRATIONS)));
    },
    checkpointer,
    async close() {
      // both connections close: the last one checkpoints the WAL and removes it
      await checkpointer?.close();
      await gate.exclusive(async () => client.close());
    },
  };
}

/**
 * Applies the migrations newer than the last one recorded, in drizzle's own table and format,
 * all in one transaction that takes the write lock before reading what is applied: another
 * process migrating the same file at the same time (`svc controlplane migrate` during a start)
 * waits for it, then finds nothing left to do, as replicas do on PostgreSQL's advisory lock.
 * Each part between breakpoints runs whole (exec), even when it holds several statements.
 * A store holding a migration this binary does not know was migrated by a newer release:
 * refused (schema-history.ts), before anything is written.
 */
export function applyMigrations(client: Database, migrations: readonly Migration[], now = Date.now()): number {
  client.exec("BEGIN IMMEDIATE");
  try {
    client.exec("CREATE TABLE IF NOT EXISTS __drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)");
    client.exec(HISTORY_DDL.sqlite);
    const applied = client
      .query<{ at: number }, []>("SELECT created_at AS at FROM __drizzle_migrations")
      .all()
      .map((r) => Number(r.at));
    const unknown = unknownMigrations(migrations, applied);
    if (unknown.length > 0) throw new StoreFromNewerRelease({ unknown, newest: newestHistory(client), known: migrations.length });
    const last = applied.reduce((a, b) => Math.max(a, b), -Infinity);
    let count = 0;
    for (const m of migrations) {
      if (last >= m.folderMillis) continue;
      for (const statement of m.sql) client.exec(statement);
      client.query("INSERT INTO __drizzle_migrations (hash, created_at) VALUES (?, ?)").run(m.hash, m.folderMillis);
      count++;
    }
    const row = historyRow(migrations, now);
    const newest = newestHistory(client);
    if (count > 0 || !newest || newest.version !== row.version || newest.commit !== row.commit) {
      client
        .query('INSERT INTO svc_schema_history (version, "commit", last_tag, migrations, applied_at) VALUES (?, ?, ?, ?, ?)')
        .run(row.version, row.commit, row.lastTag, row.migrations, row.appliedAt);
    }
    client.exec("COMMIT");
    return count;
  } catch (e) {
    if (client.inTransaction) client.exec("ROLLBACK");
    throw e;
  }
}

function newestHistory(client: Database): HistoryRow | null {
  const r = client
    .query<{ version: string; commit: string; last_tag: string; migrations: number; applied_at: number }, []>(
      'SELECT version, "commit", last_tag, migrations, applied_at FROM svc_schema_history ORDER BY id DESC LIMIT 1',
    )
    .get();
  return r ? { version: r.version, commit: r.commit, lastTag: r.last_tag, migrations: r.migrations, appliedAt: r.applied_at } : null;
}
