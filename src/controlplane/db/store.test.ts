// The storage layer on the dialect under test (SQLite, or PostgreSQL with SVC_TEST_POSTGRES_URL):
// transactions keep other requests' writes out and survive conflicts, misuse is reported,
// migrations apply once, and rows come back with the same JS types on both stores.
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import { eq, getTableName, sql } from "drizzle-orm";
import { embeddedMigrations } from "./embedded-migrations.ts";
import { openStore, rawStatements, rowCount, tables } from "./index.ts";
import { openPostgres, sqlState } from "./postgres.ts";
import { MIGRATIONS } from "./migrations/index.ts";
import { applyMigrations } from "./sqlite.ts";
import { TEST_POSTGRES_URL, freshPostgresDatabase, openTestStore } from "./test-store.ts";

const dialect = TEST_POSTGRES_URL ? "postgres" : "sqlite";

async function withOrg(name = "Acme") {
  const store = await openTestStore();
  const o = tables(store.db).organizations;
  await store.db.insert(o).values({ id: "org_1", name });
  return { store, db: store.db, o };
}

describe(`transactions (${dialect})`, () => {
  test("a write made by another request while a transaction is open is not rolled back with it", async () => {
    const { store, db, o } = await withOrg();
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const failing = db
      .transaction(async (tx) => {
        await tx.insert(tables(tx).organizations).values({ id: "org_tx", name: "rolled back" });
        entered();
        await Bun.sleep(30);
        throw new Error("abort");
      })
      .then(
        () => null,
        (e: Error) => e,
      );
    await inside;
    // Another request, outside the transaction, while it is open.
    await db.insert(o).values({ id: "org_other", name: "kept" });
    expect((await failing)?.message).toBe("abort");
    const ids = (await db.select({ id: o.id }).from(o)).map((r) => r.id).sort();
    expect(ids).toEqual(["org_1", "org_other"]);
    await store.close();
  });

  test("a write waiting for one transaction is not caught by the next one", async () => {
    const { store, db, o } = await withOrg();
    let entered!: () => void;
    const inside = new Promise<void>((r) => (entered = r));
    const first = db.transaction(async () => {
      entered();
      await Bun.sleep(30);
    });
    await inside;
    // Waits for the first transaction; so does the second, queued after it.
    const lone = db
      .insert(o)
      .values({ id: "org_other", name: "kept" })
      .then(() => null);
    await Bun.sleep(5);
    const second = db
      .transaction(async (tx) => {
        await tx.insert(tables(tx).organizations).values({ id: "org_tx", name: "rolled back" });
        throw new Error("abort");
      })
      .then(
        () => null,
        (e: Error) => e,
      );
    await first;
    await lone;
    expect((await second)?.message).toBe("abort");
    const ids = (await db.select({ id: o.id }).from(o)).map((r) => r.id).sort();
    expect(ids).toEqual(["org_1", "org_other"]);
    await store.close();
  });

  test("read-then-write transactions running together lose no update", async () => {
    const { store, db, o } = await withOrg();
    const increment = async () =>
      db.transaction(async (tx) => {
        const t = tables(tx).organizations;
        const [row] = await tx.select({ revision: t.revision }).from(t).where(eq(t.id, "org_1"));
        await Bun.sleep(5);
        await tx
          .update(t)
          .set({ revision: row!.revision + 1 })
          .where(eq(t.id, "org_1"));
      });
    await Promise.all(Array.from({ length: 8 }, increment));
    const [row] = await db.select({ revision: o.revision }).from(o).where(eq(o.id, "org_1"));
    expect(row!.revision).toBe(1 + 8);
    await store.close();
  });

  test("a transaction opened on the database inside another one is refused", async () => {
    const { store, db } = await withOrg();
    await expect(db.transaction(async () => db.transaction(async () => 1))).rejects.toThrow("inside another transaction");
    await store.close();
  });

  test("a nested transaction is a savepoint: its failure takes back its own writes only", async () => {
    const { store, db, o } = await withOrg();
    await db.transaction(async (tx) => {
      await tx.insert(tables(tx).organizations).values({ id: "org_outer", name: "kept" });
      await expect(
        tx.transaction(async (inner) => {
          await inner.insert(tables(inner).organizations).values({ id: "org_inner", name: "taken back" });
          throw new Error("inner");
        }),
      ).rejects.toThrow("inner");
      await tx.transaction(async (inner) => inner.insert(tables(inner).organizations).values({ id: "org_inner2", name: "kept" }));
    });
    expect((await db.select({ id: o.id }).from(o)).map((r) => r.id).sort()).toEqual(["org_1", "org_inner2", "org_outer"]);
    await store.close();
  });

  test.if(dialect === "postgres")("a transaction whose statement failed, the error caught in its body, is refused at its commit and keeps nothing", async () => {
    const { store, db, o } = await withOrg();
    const attempt = db.transaction(async (tx) => {
      await tx.insert(tables(tx).organizations).values({ id: "org_before", name: "lost" });
      // the same id again: the statement fails, and PostgreSQL aborts the transaction
      await tx
        .insert(tables(tx).organizations)
        .values({ id: "org_1", name: "twice" })
        .catch(() => undefined);
      return "done";
    });
    await expect(attempt).rejects.toThrow(/rolled back/);
    expect((await db.select({ id: o.id }).from(o)).map((r) => r.id)).toEqual(["org_1"]);
    // the connection went back to the pool usable: the next transaction runs
    await db.transaction(async (tx) => tx.insert(tables(tx).organizations).values({ id: "org_after", name: "kept" }));
    expect((await db.select({ id: o.id }).from(o)).map((r) => r.id).sort()).toEqual(["org_1", "org_after"]);
    await store.close();
  });

  test.if(dialect === "postgres")("a query on the pool inside a transaction is refused, not run outside it", async () => {
    const { store, db, o } = await withOrg();
    await expect(db.transaction(async () => db.select().from(o))).rejects.toThrow();
    await store.close();
  });

  test("rowCount reports rows changed; values keep their JS types", async () => {
    const { store, db, o } = await withOrg();
    expect(rowCount(await db.update(o).set({ escrowEnabled: true }).where(eq(o.id, "org_1")))).toBe(1);
    expect(rowCount(await db.update(o).set({ name: "x" }).where(eq(o.id, "org_none")))).toBe(0);
    const [row] = await db.select().from(o).where(eq(o.id, "org_1"));
    expect(row).toMatchObject({ escrowEnabled: true, revision: 1 });
    expect(typeof row!.createdAt).toBe("number");
    expect(Math.abs(row!.createdAt - Date.now())).toBeLessThan(60_000);

    const t = tables(db);
    await db.insert(t.workspaces).values({ id: "ws_1", orgId: "org_1", name: "default" });
    await db.insert(t.agents).values({ id: "agt_1", orgId: "org_1", workspaceId: "ws_1", name: "a" });
    await db.insert(t.installations).values({ id: "inst_1", orgId: "org_1", workspaceId: "ws_1", agentId: "agt_1", name: "i", platform: "chatui" });
    await db.insert(t.tools).values({ workspaceId: "ws_1", name: "crm.lookup", installationId: "inst_1", access: "read", requiredCapabilities: ["crm", "net"], updatedAt: 1_795_000_000_123 });
    const [tool] = await db.select().from(t.tools);
    expect(tool).toMatchObject({ requiredCapabilities: ["crm", "net"], updatedAt: 1_795_000_000_123 });

    const bytes = Buffer.from([0, 1, 2, 250, 255]);
    await db.insert(t.auditRecords).values({
      id: "rec_1",
      orgId: "org_1",
      workspaceId: "ws_1",
      installationId: "inst_1",
      agentId: "agt_1",
      ts: 1,
      kind: "tool",
      harness: "chatui",
      action: "tool:crm.lookup",
      decision: "permit",
      reason: "policy",
      policyRevision: 1,
      viaInstallation: false,
      recipientKeyIds: ["key_1"],
      ciphertext: bytes,
      receivedAt: 2,
    });
    const [rec] = await db.select({ c: t.auditRecords.ciphertext, via: t.auditRecords.viaInstallation, keys: t.auditRecords.recipientKeyIds }).from(t.auditRecords);
    expect(Buffer.isBuffer(rec!.c)).toBe(true);
    expect([...rec!.c!]).toEqual([...bytes]);
    expect(rec).toMatchObject({ via: false, keys: ["key_1"] });
    // The one SQL expression the services use beyond plain columns: arithmetic on a column.
    await db
      .update(o)
      .set({ revision: sql`${o.revision} + 1` })
      .where(eq(o.id, "org_1"));
    expect((await db.select({ r: o.revision }).from(o))[0]!.r).toBe(2);
    await store.close();
  });
});

// store.ts reaches two of drizzle-orm's non-public fields: `db._.fullSchema` (tables()) and
// `db.session.client` (rawStatements()). drizzle-orm is pinned to an exact version in
// package.json; this test fails when an upgrade moves either, on the database and inside a
// transaction, before anything else breaks silently.
describe(`drizzle-orm internals store.ts relies on (${dialect})`, () => {
  test("tables() is the schema's own table objects; rawStatements() runs on the store's client, and on the transaction's own connection", async () => {
    const { store, db, o } = await withOrg();
    const pinned = (JSON.parse(await Bun.file(join(import.meta.dir, "../../../package.json")).text()) as { dependencies: Record<string, string> }).dependencies["drizzle-orm"];
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    expect(getTableName(o)).toBe("organizations");
    expect(getTableName(tables(db).auditRecords)).toBe("audit_records");
    const placeholder = rawStatements(db).dialect === "postgres" ? "$1" : "?";
    expect(rawStatements(db).dialect).toBe(dialect);
    expect(await rawStatements(db).rows(`SELECT "name" FROM "organizations" WHERE "id" = ${placeholder}`, ["org_1"])).toEqual([["Acme"]]);
    await db.transaction(async (tx) => {
      expect(tables(tx).organizations).toBe(o);
      await tx
        .update(tables(tx).organizations)
        .set({ name: "Inside" })
        .where(eq(tables(tx).organizations.id, "org_1"));
      // the transaction's own write is seen: the raw statement ran on its connection
      expect(await rawStatements(tx).rows(`SELECT "name" FROM "organizations" WHERE "id" = ${placeholder}`, ["org_1"])).toEqual([["Inside"]]);
    });
    await store.close();
  });
});

/** An empty database of the dialect under test, and a way to run raw SQL on it from outside the store. */
async function emptyDatabase(): Promise<{ location: string; run(text: string): Promise<unknown[]>; close(): Promise<void> }> {
  if (dialect === "postgres") {
    const server = new URL(TEST_POSTGRES_URL!);
    const name = `svc_empty_${Math.random().toString(36).slice(2, 10)}`;
    const admin = new SQL({ url: server.toString(), max: 1 });
    await admin.unsafe(`CREATE DATABASE "${name}"`);
    await admin.close();
    server.pathname = `/${name}`;
    const client = new SQL({ url: server.toString(), max: 1 });
    return { location: server.toString(), run: async (text) => [...(await client.unsafe(text))], close: async () => client.close() };
  }
  const dir = mkdtempSync(join(tmpdir(), "svc-db-"));
  const location = join(dir, "controlplane.db");
  const client = new Database(location, { create: true });
  return {
    location,
    run: async (text) => client.query(text).all(),
    close: async () => {
      client.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

describe(`migrations (${dialect})`, () => {
  test("a second run applies nothing", async () => {
    const store = await openTestStore();
    expect(await store.migrate()).toBe(0);
    await store.close();
  });

  test("a migration that fails leaves nothing half-applied, and applies once the cause is gone", async () => {
    // organizations already there, as some other table: the first migration fails half-way.
    const { location, run, close } = await emptyDatabase();
    await run(`CREATE TABLE organizations (other integer)`);
    const store = openStore(location);
    await expect(store.migrate()).rejects.toThrow();
    // accounts, created before organizations by the same migration, was rolled back with it.
    const catalog = dialect === "postgres" ? "information_schema.tables WHERE table_schema = 'public' AND table_name" : "sqlite_master WHERE name";
    expect(await run(`SELECT CAST(count(*) AS integer) AS n FROM ${catalog} = 'accounts'`)).toEqual([{ n: 0 }]);
    await run(`DROP TABLE organizations`);
    if (dialect === "postgres") {
      // The failed run let go of the migration lock: another replica can take it.
      expect(await run(`SELECT pg_try_advisory_lock(${0x5356_4301}) AS locked`)).toEqual([{ locked: true }]);
      await run(`SELECT pg_advisory_unlock(${0x5356_4301})`);
    }
    expect(await store.migrate()).toBeGreaterThan(0);
    await store.close();
    await close();
  });

  test.if(dialect === "sqlite")("two processes migrating one SQLite file at once apply each migration once", async () => {
    const { location, close } = await emptyDatabase();
    const [a, b] = [openStore(location), openStore(location)];
    const applied = await Promise.all([a.migrate(), b.migrate()]);
    expect(applied.sort()).toEqual([0, MIGRATIONS.length]);
    await Promise.all([a.close(), b.close()]);
    await close();
  });

  test.if(dialect === "sqlite")("every statement of a migration part runs, not only the first", () => {
    const client = new Database(":memory:");
    const part = "CREATE TABLE a (x integer);\nCREATE TABLE b (x integer);";
    expect(applyMigrations(client, embeddedMigrations([{ tag: "0000_two", when: 1, breakpoints: true, sql: part }]))).toBe(1);
    expect(client.query("SELECT name FROM sqlite_master WHERE name IN ('a', 'b') ORDER BY name").all()).toEqual([{ name: "a" }, { name: "b" }]);
    client.close();
  });

  test.if(dialect === "postgres")("replicas starting together on an empty database apply each migration once", async () => {
    const server = new URL(TEST_POSTGRES_URL!);
    const empty = `svc_empty_${Math.random().toString(36).slice(2, 10)}`;
    const admin = openStore(server.toString(), { maxConnections: 1 });
    await admin.db.execute(sql.raw(`CREATE DATABASE "${empty}"`));
    await admin.close();
    server.pathname = `/${empty}`;
    const replicas = [openStore(server.toString()), openStore(server.toString()), openStore(server.toString())];
    const applied = await Promise.all(replicas.map(async (r) => r.migrate()));
    expect(applied.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    expect(applied.filter((n) => n > 0)).toHaveLength(1);
    await Promise.all(replicas.map(async (r) => r.close()));
  });

  test.if(dialect === "postgres")("test databases are fresh copies of the migrated template", async () => {
    const a = openStore(await freshPostgresDatabase());
    const o = tables(a.db).organizations;
    expect(await a.db.select().from(o)).toEqual([]);
    expect(await a.migrate()).toBe(0);
    await a.close();
  });
});

describe(`session bounds (${dialect})`, () => {
  test.if(dialect === "postgres")("every connection carries the statement, lock and idle-in-transaction timeouts", async () => {
    const store = openPostgres({ url: await freshPostgresDatabase(), timeouts: { statementMs: 300 } });
    const rows = (await store.db.execute(
      sql`select current_setting('statement_timeout') as s, current_setting('lock_timeout') as l, current_setting('idle_in_transaction_session_timeout') as i, current_setting('application_name') as a`,
    )) as unknown as Record<string, string>[];
    expect(rows[0]).toEqual({ s: "300ms", l: "10s", i: "1min", a: "svc-controlplane" });
    // a runaway statement ends with PostgreSQL's query_canceled, not a connection held forever
    const err = await store.db.execute(sql`select pg_sleep(5)`).then(
      () => null,
      (e: unknown) => e,
    );
    expect(sqlState(err)).toBe("57014");
    // migrations wait for another replica's migration lock without those bounds, then restore them
    expect(await store.migrate()).toBe(0);
    const after = (await store.db.execute(sql`select current_setting('statement_timeout') as s`)) as unknown as Record<string, string>[];
    expect(after[0]!.s).toBe("300ms");
    await store.close();
  });
});
