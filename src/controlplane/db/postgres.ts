// The scale-out store: PostgreSQL through Bun's SQL client, shared by several stateless
// control-plane replicas. Transactions run SERIALIZABLE, so they behave as on SQLite (as if
// one ran at a time), and are run again when PostgreSQL reports a serialization failure or a
// deadlock; one that runs out of attempts is answered 503 with Retry-After (http/problem.ts).
// A caller that locks the rows it needs itself may ask for READ COMMITTED instead. Migrations
// run under an advisory lock, so replicas starting together apply each once, each in a short
// transaction with its indexes built concurrently after it (postgres-migrate.ts).
import { AsyncLocalStorage } from "node:async_hooks";
import { SQL } from "bun";
import { BunSQLSession, BunSQLTransaction, drizzle } from "drizzle-orm/bun-sql";
import { embeddedMigrations } from "./embedded-migrations.ts";
import { sqlState } from "./errors.ts";
import { MIGRATIONS } from "./migrations-pg/index.ts";
import { migratePostgres } from "./postgres-migrate.ts";
import * as pgSchema from "./schema.ts";
import { type Db, type QueryLog, type Statement, type Store, pipelinedCommits } from "./store.ts";

/** SQLSTATEs after which a whole transaction is run again: serialization_failure, deadlock_detected. */
const RETRYABLE = new Set(["40001", "40P01"]);
const MAX_ATTEMPTS = 10;
/** Any constant shared by every replica: the advisory lock that serializes migrations. */
const MIGRATION_LOCK = 0x5356_4301;

export type PostgresOptions = { url: string; maxConnections?: number; idleTimeoutSeconds?: number; timeouts?: Partial<SessionTimeouts>; logQuery?: QueryLog };

/**
 * Bounds on every connection's work, sent as run-time parameters when it opens: a statement
 * that runs away, a lock that is never granted, or a transaction left open by a stuck caller
 * end with an error instead of holding a pooled connection (and its locks) indefinitely.
 * Milliseconds; migrations lift the first two while they hold the migration lock.
 */
export type SessionTimeouts = { statementMs: number; lockMs: number; idleInTransactionMs: number; connectSeconds: number };
export const DEFAULT_TIMEOUTS: SessionTimeouts = { statementMs: 30_000, lockMs: 10_000, idleInTransactionMs: 60_000, connectSeconds: 10 };

/** Query parameters of a connection URL that carry secrets (Bun's client reads `password` there too). */
const SECRET_PARAMS = /^(password|sslpassword)$/i;

/** The URL for logs and messages: passwords, in the user part or the query, replaced by ***. */
export { sqlState };

export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    for (const key of [...u.searchParams.keys()]) if (SECRET_PARAMS.test(key)) u.searchParams.set(key, "***");
    return u.toString();
  } catch {
    return "postgres://(unparsable URL)";
  }
}

export function openPostgres(options: PostgresOptions): Store {
  const t = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
  const client = new SQL({
    url: options.url,
    max: options.maxConnections ?? 10,
    idleTimeout: options.idleTimeoutSeconds ?? 30,
    connectionTimeout: t.connectSeconds,
    connection: {
      application_name: "svc-controlplane",
      statement_timeout: t.statementMs,
      lock_timeout: t.lockMs,
      idle_in_transaction_session_timeout: t.idleInTransactionMs,
    },
  });
  // A query sent on the pool from inside a transaction would run outside it, and could wait
  // for a lock the transaction holds: a bug in the caller, reported as one.
  const inTransaction = new AsyncLocalStorage<true>();
  const guarded = new Proxy(client, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (prop === "unsafe") {
        // Not async: drizzle calls .values() on what unsafe() returns (Bun's query object, a
        // thenable); an async wrapper would hand it a plain Promise.
        // eslint-disable-next-line @typescript-eslint/promise-function-async
        return (...args: Parameters<SQL["unsafe"]>) => {
          if (inTransaction.getStore()) throw new Error("a query was sent on the database inside a transaction: use the transaction's tx");
          return target.unsafe(...args);
        };
      }
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const orm = drizzle({ client: guarded, schema: pgSchema, ...(options.logQuery ? { logger: { logQuery: options.logQuery } } : {}) });

  // Transactions on a reserved connection of their own, in as few round trips as the body lets
  // (issue 30: ingest holds its organization's store head for its whole transaction): BEGIN with
  // its isolation level in one statement, not drizzle's BEGIN then SET TRANSACTION; BEGIN and
  // COMMIT prepared like the body's own statements (a tagged template), so Bun.SQL pipelines
  // statements started one after the other (it waits out a simple-protocol query first); and a
  // body's last statements sent with the COMMIT behind them (rawStatements(tx).finish, store.ts).
  const base = (orm as unknown as { session: { dialect: never; schema: never; options: never } }).session;
  type Isolation = "read committed" | "serializable";
  async function runTransaction<T>(body: (tx: Db) => Promise<T>, isolation: Isolation): Promise<T> {
    const conn = await client.reserve();
    let open = false;
    const committed = (answer: { command?: string }) => {
      // a statement failed earlier (and its error was caught): PostgreSQL answers COMMIT with ROLLBACK
      if (answer.command !== "COMMIT") throw new Error(`the transaction was rolled back: COMMIT was answered ${answer.command ?? "without a command"}`);
    };
    try {
      await (isolation === "serializable" ? conn`BEGIN ISOLATION LEVEL SERIALIZABLE` : conn`BEGIN ISOLATION LEVEL READ COMMITTED`);
      open = true;
      pipelinedCommits.set(conn, async (statements: readonly Statement[]) => {
        if (!open) throw new Error("the transaction is finished: nothing may be sent on it after its last statements");
        const sent = statements.map(async (st) => conn.unsafe(st.text, st.params).values().execute());
        const commit = conn`COMMIT`.execute();
        open = false;
        const settled = await Promise.allSettled([...sent, commit]);
        // the first failure is the cause; the statements after it and the COMMIT only report the aborted transaction
        const failed = settled.find((r) => r.status === "rejected");
        if (failed) throw failed.reason;
        committed((settled[settled.length - 1] as PromiseFulfilledResult<{ command?: string }>).value);
        return settled.slice(0, -1).map((r) => (r as PromiseFulfilledResult<unknown[][]>).value);
      });
      // drizzle's transaction over the reserved connection; a nested one is a savepoint on it
      const tx = new BunSQLTransaction(base.dialect, new BunSQLSession(conn as never, base.dialect, base.schema, base.options), base.schema) as unknown as Db;
      let savepoints = 0;
      Object.assign(tx, {
        transaction: async <U>(nested: (inner: Db) => Promise<U>): Promise<U> => {
          const name = `svc_savepoint_${++savepoints}`;
          await conn.unsafe(`SAVEPOINT ${name}`);
          try {
            const r = await nested(tx);
            await conn.unsafe(`RELEASE SAVEPOINT ${name}`);
            return r;
          } catch (e) {
            await conn.unsafe(`ROLLBACK TO SAVEPOINT ${name}`);
            throw e;
          }
        },
      });
      const result = await body(tx);
      if (open) {
        open = false;
        committed(await conn`COMMIT`);
      }
      return result;
    } catch (e) {
      if (open) await conn`ROLLBACK`.catch(() => {});
      throw e;
    } finally {
      pipelinedCommits.delete(conn);
      void conn.release();
    }
  }
  Object.assign(orm, {
    transaction: async (body: (tx: Db) => Promise<unknown>, config?: { isolationLevel?: Isolation }) => {
      if (inTransaction.getStore()) throw new Error("a transaction was opened on the database inside another transaction: use the transaction's own tx.transaction()");
      // SERIALIZABLE unless the caller takes its own row locks in a fixed order (audit ingest:
      // audit-chain/store-heads.ts), where READ COMMITTED waits for a lock instead of failing.
      const isolationLevel = config?.isolationLevel ?? "serializable";
      for (let attempt = 1; ; attempt++) {
        try {
          return await inTransaction.run(true, async () => runTransaction(body, isolationLevel));
        } catch (e) {
          if (attempt >= MAX_ATTEMPTS || !RETRYABLE.has(sqlState(e) ?? "")) throw e;
          await Bun.sleep(Math.random() * 5 * 2 ** Math.min(attempt, 6));
        }
      }
    },
  });

  return {
    db: orm as unknown as Db,
    dialect: "postgres",
    location: redactUrl(options.url),
    async migrate() {
      const conn = await client.reserve();
      try {
        // Another replica may be migrating: wait for it however long it takes, and let a
        // migration's DDL take its time (RESET below restores the connection's own bounds).
        await conn`SET statement_timeout = 0`;
        await conn`SET lock_timeout = 0`;
        // Polled, not waited for in one statement: a replica blocked inside pg_advisory_lock is
        // a transaction the holder's CREATE INDEX CONCURRENTLY would wait for (a deadlock).
        while (!((await conn`SELECT pg_try_advisory_lock(${MIGRATION_LOCK}) AS got`) as { got: boolean }[])[0]!.got) await Bun.sleep(200);
        try {
          return await migratePostgres(conn, embeddedMigrations(MIGRATIONS));
        } finally {
          // After a failure too: the lock belongs to the session, which goes back to the pool
          // and would keep every replica's migrations waiting for as long as it lives.
          await conn`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`;
        }
      } finally {
        await conn`RESET statement_timeout`.catch(() => {});
        await conn`RESET lock_timeout`.catch(() => {});
        void conn.release();
      }
    },
    async close() {
      await client.close();
    },
  };
}
