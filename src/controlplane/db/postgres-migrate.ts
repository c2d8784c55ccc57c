// PostgreSQL migrations that do not stop the audit (issue 29). drizzle's migrator runs every
// pending migration in one transaction: on a store with a million audit records, an ALTER
// TABLE audit_records and seven CREATE INDEX held the table's lock for 12.5 s, and the other
// replicas' ingest and search answered 500. This migrator keeps drizzle's bookkeeping
// (`drizzle.__drizzle_migrations`, so every release reads the same history) and changes how
// each migration runs:
//   - one transaction per migration, with a short lock_timeout: an ALTER that cannot get its
//     lock at once gives up and tries again after a pause, instead of queueing every other
//     query of the table behind it while a long reader finishes;
//   - `CREATE INDEX` on a table that existed before the migration is not run in it: it is
//     recorded in `svc_pending_index_builds` in the same transaction and built after commit
//     with CREATE INDEX CONCURRENTLY, which lets writes in while it reads the table. An
//     interrupted build leaves an invalid index that the next start drops and builds again;
//     the pending row is deleted only once the index is valid. Unique indexes stay in the
//     transaction (they enforce something from the moment the migration is recorded);
//   - `DROP INDEX` becomes `DROP INDEX IF EXISTS` (a later migration may drop an index whose
//     build is still pending) and cancels a pending build of that name.
// A store holding migrations this release does not know is refused (schema-history.ts).
import type { ReservedSQL } from "bun";
import type { Migration } from "./embedded-migrations.ts";
import { HISTORY_DDL, type HistoryRow, StoreFromNewerRelease, historyRow, unknownMigrations } from "./schema-history.ts";

/** How long a migration's DDL waits for a table lock before it gives up and tries again. */
export const MIGRATION_LOCK_TIMEOUT_MS = 800;
const LOCK_ATTEMPTS = 30;

const PENDING_DDL = "CREATE TABLE IF NOT EXISTS svc_pending_index_builds (name text PRIMARY KEY, statement text NOT NULL, tag text NOT NULL)";

type Part = { kind: "tx"; sql: string } | { kind: "index"; name: string; sql: string } | { kind: "drop-index"; name: string; sql: string };

/** How each statement of a migration runs (pure). */
export function planMigration(statements: readonly string[]): Part[] {
  const created = new Set<string>();
  for (const s of statements) {
    const m = /^\s*CREATE TABLE (?:IF NOT EXISTS )?"([^"]+)"/i.exec(s);
    if (m) created.add(m[1]!);
  }
  return statements
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .map((s): Part => {
      const index = /^CREATE INDEX (?:IF NOT EXISTS )?"([^"]+)" ON "([^"]+)"/i.exec(s);
      if (index && !created.has(index[2]!)) {
        const concurrent = s.replace(/^CREATE INDEX (?:IF NOT EXISTS )?/i, "CREATE INDEX CONCURRENTLY IF NOT EXISTS ").replace(/;\s*$/, "");
        return { kind: "index", name: index[1]!, sql: concurrent };
      }
      const drop = /^DROP INDEX (?:IF EXISTS )?"([^"]+)"/i.exec(s);
      if (drop) return { kind: "drop-index", name: drop[1]!, sql: s.replace(/^DROP INDEX (?:IF EXISTS )?/i, "DROP INDEX IF EXISTS ") };
      return { kind: "tx", sql: s };
    });
}

const LOCK_NOT_AVAILABLE = "55P03";
const errno = (e: unknown) => (e as { errno?: string }).errno;

/** Runs `body` in a transaction, again after a pause when a lock was not granted in time. */
async function withLockRetries(conn: ReservedSQL, body: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await conn`BEGIN`;
      await conn.unsafe(`SET LOCAL lock_timeout = '${MIGRATION_LOCK_TIMEOUT_MS}ms'`);
      await body();
      await conn`COMMIT`;
      return;
    } catch (e) {
      await conn`ROLLBACK`.catch(() => {});
      if (errno(e) !== LOCK_NOT_AVAILABLE || attempt >= LOCK_ATTEMPTS) throw e;
      await Bun.sleep(Math.min(5_000, 100 * 2 ** Math.min(attempt, 6)) * (0.5 + Math.random()));
    }
  }
}

/**
 * Applies pending migrations on `conn` (a reserved connection holding the migration lock, with
 * no statement timeout); returns how many were applied.
 */
export async function migratePostgres(conn: ReservedSQL, migrations: readonly Migration[], now = Date.now()): Promise<number> {
  await conn`CREATE SCHEMA IF NOT EXISTS drizzle`;
  await conn`CREATE TABLE IF NOT EXISTS drizzle.__drizzle_migrations (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at bigint)`;
  await conn.unsafe(HISTORY_DDL.postgres);
  await conn.unsafe(PENDING_DDL);
  const applied = ((await conn`SELECT created_at FROM drizzle.__drizzle_migrations`) as { created_at: string | number }[]).map((r) => Number(r.created_at));
  const unknown = unknownMigrations(migrations, applied);
  if (unknown.length > 0) throw new StoreFromNewerRelease({ unknown, newest: await newestHistory(conn), known: migrations.length });
  const last = applied.reduce((a, b) => Math.max(a, b), -Infinity);
  let count = 0;
  for (const m of migrations) {
    if (last >= m.folderMillis) continue;
    const parts = planMigration(m.sql);
    await withLockRetries(conn, async () => {
      for (const p of parts) {
        if (p.kind === "index") {
          await conn`INSERT INTO svc_pending_index_builds (name, statement, tag) VALUES (${p.name}, ${p.sql}, ${m.tag}) ON CONFLICT (name) DO UPDATE SET statement = excluded.statement, tag = excluded.tag`;
          continue;
        }
        if (p.kind === "drop-index") await conn`DELETE FROM svc_pending_index_builds WHERE name = ${p.name}`;
        await conn.unsafe(p.sql);
      }
      await conn`INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES (${m.hash}, ${m.folderMillis})`;
    });
    count++;
  }
  await buildPendingIndexes(conn);
  const row = historyRow(migrations, now);
  const newest = await newestHistory(conn);
  if (count > 0 || !newest || newest.version !== row.version || newest.commit !== row.commit) {
    await conn`INSERT INTO svc_schema_history (version, "commit", last_tag, migrations, applied_at) VALUES (${row.version}, ${row.commit}, ${row.lastTag}, ${row.migrations}, ${row.appliedAt})`;
  }
  return count;
}

/** Builds every pending index concurrently (outside any transaction), oldest first. */
export async function buildPendingIndexes(conn: ReservedSQL): Promise<number> {
  const pending = (await conn`SELECT name, statement FROM svc_pending_index_builds ORDER BY tag, name`) as { name: string; statement: string }[];
  for (const p of pending) {
    // A build interrupted earlier (a crash, a cancelled statement) left an invalid index of that name.
    const [state] =
      (await conn`SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.relname = ${p.name} AND n.nspname = current_schema()`) as {
        valid: boolean;
      }[];
    if (state && !state.valid) await conn.unsafe(`DROP INDEX CONCURRENTLY IF EXISTS "${p.name.replace(/"/g, '""')}"`);
    await conn.unsafe(p.statement);
    await conn`DELETE FROM svc_pending_index_builds WHERE name = ${p.name}`;
  }
  return pending.length;
}

async function newestHistory(conn: ReservedSQL): Promise<HistoryRow | null> {
  const [r] = (await conn`SELECT version, "commit", last_tag, migrations, applied_at FROM svc_schema_history ORDER BY id DESC LIMIT 1`) as {
    version: string;
    commit: string;
    last_tag: string;
    migrations: number;
    applied_at: string | number;
  }[];
  return r ? { version: r.version, commit: r.commit, lastTag: r.last_tag, migrations: r.migrations, appliedAt: Number(r.applied_at) } : null;
}
