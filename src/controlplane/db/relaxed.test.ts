// A relaxed transaction (store.ts relaxedTransaction, retention's batches) commits without the
// WAL's fsync on SQLite, and only it: the connection is back at synchronous FULL for every other
// statement and transaction, after a commit and after a rollback alike.
import { expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rawStatements, relaxedTransaction, tables } from "./index.ts";
import { openSqlite } from "./sqlite.ts";

test("a relaxed transaction commits without the fsync; the next one and every lone statement have it again", async () => {
  const dir = mkdtempSync(join(tmpdir(), "svc-relaxed-"));
  const store = openSqlite(join(dir, "cp.db"));
  try {
    await store.migrate();
    const synchronous = async (db: typeof store.db) => Number((await rawStatements(db).rows("PRAGMA synchronous", []))[0]![0]);
    // 2: FULL, 1: NORMAL
    expect(await synchronous(store.db)).toBe(2);
    const o = tables(store.db).organizations;
    const inside = await relaxedTransaction(store.db, async (tx) => {
      await tx.insert(o).values({ id: "org_1", name: "Acme" });
      return synchronous(tx);
    });
    expect(inside).toBe(1);
    expect(await synchronous(store.db)).toBe(2);
    expect(await store.db.select().from(o)).toHaveLength(1);
    await expect(
      relaxedTransaction(store.db, async (tx) => {
        await tx.insert(o).values({ id: "org_2", name: "Beta" });
        throw new Error("the batch failed");
      }),
    ).rejects.toThrow("the batch failed");
    expect(await synchronous(store.db)).toBe(2);
    expect(await store.db.select().from(o)).toHaveLength(1);
    expect(await store.db.transaction(async (tx) => synchronous(tx))).toBe(2);
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
