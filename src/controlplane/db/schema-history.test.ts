// Issue 29: a store migrated by a newer release is refused, naming both releases and the way
// back, and nothing is written; each release that migrates (or first starts on) a store leaves
// a history row. On PostgreSQL, indexes on existing tables are built concurrently after their
// migration's transaction, and a build that was interrupted is completed at the next start.
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { embeddedMigrations } from "./embedded-migrations.ts";
import { openStore } from "./index.ts";
import { MIGRATIONS as PG_MIGRATIONS } from "./migrations-pg/index.ts";
import { MIGRATIONS as SQLITE_MIGRATIONS } from "./migrations/index.ts";
import { buildPendingIndexes, planMigration } from "./postgres-migrate.ts";
import { StoreFromNewerRelease, storeFromNewerReleaseMessage, unknownMigrations } from "./schema-history.ts";
import { applyMigrations } from "./sqlite.ts";
import { TEST_POSTGRES_URL, freshPostgresDatabase } from "./test-store.ts";
import { COMMIT, VERSION } from "../../version.ts";

const FUTURE = 4_102_444_800_000; // 2100-01-01: a migration no release of today knows

describe("schema history (pure)", () => {
  test("unknown migrations are the applied ones this release does not list, oldest first", () => {
    const known = [
      { tag: "0000_a", folderMillis: 1 },
      { tag: "0001_b", folderMillis: 2 },
    ];
    expect(unknownMigrations(known, [1, 2])).toEqual([]);
    expect(unknownMigrations(known, [1, FUTURE, 2, 3])).toEqual([3, FUTURE]);
  });

  test("the refusal names the newer release, this one, and the restore", () => {
    const text = storeFromNewerReleaseMessage({ unknown: [FUTURE], newest: { version: "0.3.0", commit: "abcdef123456", lastTag: "0031_x", migrations: 32, appliedAt: 0 }, known: 21 });
    expect(text).toContain("svc 0.3.0 (abcdef123456), whose last migration is 0031_x");
    expect(text).toContain(`svc ${VERSION} (${COMMIT}) does not know`);
    expect(text).toContain("restore the backup taken before the upgrade");
    expect(text).toContain("docs/upgrade.md");
  });

  test("PostgreSQL plan: indexes on existing tables are built concurrently, unique ones and new tables' stay in the transaction", () => {
    const plan = planMigration([
      'CREATE TABLE "t" ("id" text);',
      'CREATE INDEX "t_id" ON "t" USING btree ("id");',
      'ALTER TABLE "audit_records" ADD "x" text;',
      'CREATE INDEX "audit_x" ON "audit_records" USING btree ("org_id","x") WHERE "audit_records"."x" is not null;',
      'CREATE UNIQUE INDEX "audit_u" ON "audit_records" USING btree ("id");',
      'DROP INDEX "audit_old";',
    ]);
    expect(plan.map((p) => p.kind)).toEqual(["tx", "tx", "tx", "index", "tx", "drop-index"]);
    expect(plan[3]!.sql).toBe('CREATE INDEX CONCURRENTLY IF NOT EXISTS "audit_x" ON "audit_records" USING btree ("org_id","x") WHERE "audit_records"."x" is not null');
    expect(plan[5]!.sql).toBe('DROP INDEX IF EXISTS "audit_old";');
  });
});

describe("SQLite", () => {
  test("a store from a newer release is refused before anything is written; history names each release", () => {
    const client = new Database(":memory:");
    const migrations = embeddedMigrations(SQLITE_MIGRATIONS);
    expect(applyMigrations(client, migrations, 1000)).toBe(migrations.length);
    const history = () => client.query<{ version: string; commit: string; migrations: number }, []>('SELECT version, "commit", migrations FROM svc_schema_history ORDER BY id').all();
    expect(history()).toEqual([{ version: VERSION, commit: COMMIT, migrations: migrations.length }]);
    // started again by the same release: nothing applied, no new row
    expect(applyMigrations(client, migrations, 2000)).toBe(0);
    expect(history()).toHaveLength(1);
    // a newer release migrated it: its migration and its history row
    client.run("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('future', ?)", [FUTURE]);
    client.run("INSERT INTO svc_schema_history (version, \"commit\", last_tag, migrations, applied_at) VALUES ('9.9.9', 'f00f00f00f00', '9999_future', 999, 3000)");
    let err: unknown;
    try {
      applyMigrations(client, migrations, 4000);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StoreFromNewerRelease);
    expect((err as Error).message).toContain("svc 9.9.9 (f00f00f00f00), whose last migration is 9999_future");
    expect(history()).toHaveLength(2);
    expect(client.inTransaction).toBe(false);
    client.close();
  });
});

describe.if(!!TEST_POSTGRES_URL)("PostgreSQL", () => {
  test("a store from a newer release is refused, with the newer release named", async () => {
    const url = await freshPostgresDatabase();
    const sql = new SQL({ url, max: 1 });
    await sql`INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ('future', ${FUTURE})`;
    await sql`CREATE TABLE IF NOT EXISTS svc_schema_history (id serial PRIMARY KEY, version text NOT NULL, "commit" text NOT NULL, last_tag text NOT NULL, migrations integer NOT NULL, applied_at bigint NOT NULL)`;
    await sql`INSERT INTO svc_schema_history (version, "commit", last_tag, migrations, applied_at) VALUES ('9.9.9', 'f00f00f00f00', '9999_future', 999, 0)`;
    const store = openStore(url);
    const err = await store.migrate().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(StoreFromNewerRelease);
    expect((err as Error).message).toContain("svc 9.9.9 (f00f00f00f00)");
    await store.close();
    await sql.close();
  });

  test("an index build interrupted half-way is completed at the next start", async () => {
    const url = await freshPostgresDatabase();
    const sql = new SQL({ url, max: 1 });
    await sql`CREATE TABLE wide (id integer, v text)`;
    await sql`INSERT INTO wide SELECT g, md5(g::text) FROM generate_series(1, 200000) g`;
    const statement = 'CREATE INDEX CONCURRENTLY IF NOT EXISTS "wide_v" ON "wide" USING btree ("v")';
    // cancelled part-way: PostgreSQL leaves an invalid index behind
    await sql`SET statement_timeout = '20ms'`;
    await sql.unsafe(statement).catch(() => undefined);
    await sql`SET statement_timeout = 0`;
    const validity = async () => ((await sql`SELECT i.indisvalid AS valid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE c.relname = 'wide_v'`) as { valid: boolean }[])[0]?.valid;
    expect(await validity()).toBe(false);
    await sql`INSERT INTO svc_pending_index_builds (name, statement, tag) VALUES ('wide_v', ${statement}, '9999_test')`;
    const conn = await sql.reserve();
    expect(await buildPendingIndexes(conn)).toBe(1);
    void conn.release();
    expect(await validity()).toBe(true);
    expect(await sql`SELECT name FROM svc_pending_index_builds`).toHaveLength(0);
    await sql.close();
  });

  test("every migration's pending index builds are done once migrate returns", async () => {
    const url = await freshPostgresDatabase();
    const sql = new SQL({ url, max: 1 });
    expect(await sql`SELECT name FROM svc_pending_index_builds`).toHaveLength(0);
    const invalid = await sql`SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE NOT i.indisvalid`;
    expect(invalid).toHaveLength(0);
    expect(PG_MIGRATIONS.length).toBeGreaterThan(0);
    await sql.close();
  });
});
