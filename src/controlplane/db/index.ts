// Opens the control plane's SQLite database (WAL, full sync, foreign keys) and applies the
// embedded migrations. drizzle's own migrator reads a folder; a compiled binary has none, so
// the same migration records are built from the embedded SQL and handed to drizzle's dialect.
import { Database } from "bun:sqlite";
import { createHash } from "node:crypto";
import { drizzle, type BunSQLiteDatabase } from "drizzle-orm/bun-sqlite";
import type { MigrationMeta } from "drizzle-orm/migrator";
import { MIGRATIONS } from "./migrations/index.ts";
import * as schema from "./schema.ts";

export type Db = BunSQLiteDatabase<typeof schema> & { $client: Database };
export { schema };

export function openDatabase(path: string): Db {
  const client = new Database(path, { create: true, strict: true });
  client.exec("PRAGMA journal_mode = WAL");
  client.exec("PRAGMA synchronous = FULL");
  client.exec("PRAGMA foreign_keys = ON");
  client.exec("PRAGMA busy_timeout = 5000");
  return drizzle({ client, schema }) as Db;
}

function migrationMeta(): MigrationMeta[] {
  return MIGRATIONS.map((m) => ({
    sql: m.sql.split("--> statement-breakpoint"),
    bps: m.breakpoints,
    folderMillis: m.when,
    hash: createHash("sha256").update(m.sql).digest("hex"),
  }));
}

/** Applies pending migrations; returns how many were applied. */
export function migrate(db: Db): number {
  const before = appliedCount(db);
  // drizzle's dialect migrator: same bookkeeping table as drizzle-kit (__drizzle_migrations).
  (db as unknown as { dialect: { migrate: (m: MigrationMeta[], s: unknown, c: object) => void }; session: unknown }).dialect.migrate(
    migrationMeta(),
    (db as unknown as { session: unknown }).session,
    {},
  );
  return appliedCount(db) - before;
}

function appliedCount(db: Db): number {
  const row = db.$client
    .query<{ n: number }, []>("SELECT count(*) AS n FROM sqlite_master WHERE type='table' AND name='__drizzle_migrations'")
    .get();
  if (!row?.n) return 0;
  return db.$client.query<{ n: number }, []>("SELECT count(*) AS n FROM __drizzle_migrations").get()?.n ?? 0;
}

export function openMigrated(path: string): Db {
  const db = openDatabase(path);
  migrate(db);
  return db;
}
