// The serving connection's commits never checkpoint (issue 30: a checkpoint's fsync, inside some
// request's commit, held every request for 0.9 s at 1M records); a worker with its own
// connection does, beside it. Real SQLite files; no timing is asserted.
import { afterEach, expect, test } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type SQL, sql } from "drizzle-orm";
import { linesLogger } from "../../log/index.ts";
import { ControlPlaneMetrics } from "../metrics/index.ts";
import { BACKSTOP_PAGES, type CheckpointStatus, Checkpointer, RESTART_FRAMES } from "./checkpointer.ts";
import { type SqliteStore, openSqlite } from "./sqlite.ts";
import { relaxedTransaction } from "./store.ts";

/** A WAL frame: a 24-byte header and a 4,096-byte page. */
const FRAME = 24 + 4096;
const DIED = "sqlite checkpoint worker ended; it is started again, meanwhile only the serving connection's backstop checkpoints";
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function fileStore(checkpointEveryMs: number): { store: SqliteStore; path: string } {
  const dir = mkdtempSync(join(tmpdir(), "svc-checkpointer-"));
  dirs.push(dir);
  const path = join(dir, "controlplane.db");
  return { store: openSqlite(path, { checkpointEveryMs }), path };
}

const raw = (store: SqliteStore) => store.db as unknown as { run(q: SQL): Promise<unknown>; all(q: SQL): Promise<unknown[][]> };

/** `commits` transactions of about 100 pages each, through the serving connection. */
async function write(store: SqliteStore, commits: number): Promise<void> {
  await raw(store).run(sql`CREATE TABLE IF NOT EXISTS filler (x blob)`);
  for (let i = 0; i < commits; i++) await raw(store).run(sql`INSERT INTO filler VALUES (randomblob(${100 * 4096}))`);
}

test("the serving connection checkpoints only past the backstop; the worker checkpoints every committed page", async () => {
  // the worker's timer does not fire during the test: what it does, it does when asked
  const { store, path } = fileStore(3_600_000);
  expect(await raw(store).all(sql`PRAGMA wal_autocheckpoint`)).toEqual([[BACKSTOP_PAGES]]);
  await write(store, 30);
  // ~3,000 pages committed in 30 commits are all still in the WAL: with SQLite's default (1,000
  // pages) a commit would have checkpointed and the WAL restarted from its start, never past ~1,100 frames
  const frames = Math.floor((statSync(`${path}-wal`).size - 32) / FRAME);
  expect(frames).toBeGreaterThan(3000);
  const status: CheckpointStatus = await store.checkpointer!.now();
  expect(status.error).toBeNull();
  expect(status.last).toEqual({ busy: false, log: frames, checkpointed: frames });
  // a checkpointed WAL is started again from its beginning by the next commit: it does not grow
  await write(store, 5);
  expect(statSync(`${path}-wal`).size).toBe(32 + frames * FRAME);
  await store.close();
  // the worker's connection closed too, so the last one checkpointed and removed the WAL
  expect(existsSync(`${path}-wal`)).toBe(false);
});

test("on its timer the worker keeps the WAL checkpointed while the serving connection writes", async () => {
  const { store } = fileStore(10);
  try {
    await write(store, 10);
    let status: CheckpointStatus = await store.checkpointer!.status();
    for (let i = 0; i < 500 && !(status.last && status.last.log > 0 && status.last.checkpointed === status.last.log); i++) {
      await Bun.sleep(20);
      status = await store.checkpointer!.status();
    }
    expect(status.error).toBeNull();
    expect(status.last?.checkpointed).toBe(status.last?.log);
    expect(status.last?.log).toBeGreaterThan(0);
    expect(status.checkpoints).toBeGreaterThan(0);
  } finally {
    await store.close();
  }
});

test("under steady writes the worker has the WAL started again long before the backstop: the serving connection never checkpoints", async () => {
  // 15,000 pages in 600 commits back to back, the worker on a short timer: its passes never
  // find a moment without a commit, so without the hold the WAL grew to the backstop and the
  // serving connection checkpointed in a commit (on the event loop) every BACKSTOP_PAGES frames
  const { store, path } = fileStore(10);
  try {
    await raw(store).run(sql`CREATE TABLE filler (x blob)`);
    // transactions, as ingest's and retention's writes are (the hold lets lone statements
    // through), relaxed as retention's batches (no fsync: they come faster than a pass copies),
    // each in a turn of the event loop of its own
    for (let i = 0; i < 600; i++) {
      await relaxedTransaction(store.db, async (tx) => raw({ db: tx } as SqliteStore).run(sql`INSERT INTO filler VALUES (randomblob(${25 * 4096}))`));
      await new Promise((turn) => setImmediate(turn));
    }
    // the WAL file keeps its largest size: it never held BACKSTOP_PAGES frames, so the serving
    // connection's autocheckpoint (which runs only past them) never ran, and the WAL started again
    const frames = Math.floor((statSync(`${path}-wal`).size - 32) / FRAME);
    expect(frames).toBeGreaterThanOrEqual(RESTART_FRAMES);
    expect(frames).toBeLessThan(BACKSTOP_PAGES);
    expect(store.checkpointer!.health()).toMatchObject({ running: true, restarts: 0 });
  } finally {
    await store.close();
  }
});

test("a worker that dies is one line in the store's log and is started again, after delays that double up to a bound", async () => {
  // its connection cannot open: the file's directory is not there yet (what a crash looks like from outside)
  const dir = mkdtempSync(join(tmpdir(), "svc-checkpointer-"));
  dirs.push(dir);
  const path = join(dir, "later", "controlplane.db");
  const lines: string[] = [];
  const checkpointer = new Checkpointer(path, { everyMs: 3_600_000, log: linesLogger(lines), restartDelayMs: { first: 20, max: 80 } });
  try {
    const died = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.event === DIED);
    for (let i = 0; i < 300 && died().length < 5; i++) await Bun.sleep(10);
    expect(died().length).toBeGreaterThanOrEqual(5);
    expect(died()[0]).toMatchObject({ level: "error", database: path, error: "SQLiteError: unable to open database file", restart_in_ms: 20, restarts: 1 });
    // doubled each time, never past the bound
    expect(
      died()
        .slice(0, 5)
        .map((l) => l.restart_in_ms),
    ).toEqual([20, 40, 80, 80, 80]);
    expect(checkpointer.health()).toMatchObject({ restarts: died().length, lastError: "SQLiteError: unable to open database file" });

    // once its connection can open, the next start keeps running and checkpoints
    mkdirSync(join(dir, "later"));
    const store = openSqlite(path, { checkpointEveryMs: 3_600_000 });
    try {
      let status: CheckpointStatus = await checkpointer.now();
      for (let i = 0; i < 200 && status.error !== null; i++) {
        await Bun.sleep(10);
        status = await checkpointer.now();
      }
      expect(status).toMatchObject({ error: null, checkpoints: 1 });
      expect(checkpointer.health().running).toBe(true);
      const restarts = checkpointer.health().restarts;
      await Bun.sleep(200);
      expect(checkpointer.health().restarts).toBe(restarts);
    } finally {
      await store.close();
    }
  } finally {
    await checkpointer.close();
  }
  // closed, it is not started again
  const after = lines.length;
  await Bun.sleep(200);
  expect(lines.length).toBe(after);
  expect(checkpointer.health().running).toBe(false);
});

test("an in-memory store has no checkpoint worker", async () => {
  const store = openSqlite(":memory:");
  expect(store.checkpointer).toBeNull();
  await store.close();
});

test("a worker that dies after it has checkpointed (terminated, or throwing) is logged, started again after the delay, checkpoints again, and /metrics counts it", async () => {
  // the real worker threads, as the checkpointer starts them, so the test can end one from outside
  const RealWorker = globalThis.Worker;
  const workers: Worker[] = [];
  globalThis.Worker = class extends RealWorker {
    constructor(...args: ConstructorParameters<typeof Worker>) {
      super(...args);
      workers.push(this);
    }
  };
  const { store, path } = fileStore(3_600_000);
  const lines: string[] = [];
  const checkpointer = new Checkpointer(path, { everyMs: 3_600_000, log: linesLogger(lines), restartDelayMs: { first: 50, max: 400 } });
  const metrics = new ControlPlaneMetrics();
  metrics.watchCheckpoints(() => checkpointer.health());
  const shown = async (series: string) => Number(new RegExp(`^${series} (\\d+)$`, "m").exec(await metrics.registry.render())?.[1]);
  const died = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => l.event === DIED);
  /** Commits, then has the (new) worker checkpoint them: every frame of the WAL is in the database file. */
  const checkpointsAgain = async () => {
    let status: CheckpointStatus = await checkpointer.now();
    for (let i = 0; i < 300 && status.error !== null; i++) {
      await Bun.sleep(10);
      status = await checkpointer.now();
    }
    await write(store, 3);
    status = await checkpointer.now();
    expect(status.error).toBeNull();
    expect(status.last!.log).toBeGreaterThan(0);
    expect(status.last!.checkpointed).toBe(status.last!.log);
  };
  try {
    await checkpointsAgain();
    expect(await shown("svc_cp_sqlite_checkpoint_worker_restarts_total")).toBe(0);
    const first = workers.at(-1)!;

    // its thread ends without an error event (the "close" path)
    first.terminate();
    for (let i = 0; i < 300 && died().length < 1; i++) await Bun.sleep(5);
    expect(died()).toEqual([expect.objectContaining({ level: "error", database: path, error: "the worker thread exited", restart_in_ms: 50, restarts: 1 })]);
    expect(checkpointer.health()).toMatchObject({ running: false, restarts: 1 });
    expect(await shown("svc_cp_sqlite_checkpoint_worker_up")).toBe(0);
    expect(await shown("svc_cp_sqlite_checkpoint_worker_restarts_total")).toBe(1);
    await checkpointsAgain();
    expect(workers.at(-1)).not.toBe(first);
    expect(checkpointer.health()).toMatchObject({ running: true, restarts: 1 });
    expect(await shown("svc_cp_sqlite_checkpoint_worker_up")).toBe(1);

    // it throws on a message it cannot read (the "error" path): the next delay is doubled
    const second = workers.at(-1)!;
    second.postMessage(null);
    for (let i = 0; i < 300 && died().length < 2; i++) await Bun.sleep(5);
    expect(died()[1]).toMatchObject({ level: "error", database: path, restart_in_ms: 100, restarts: 2 });
    expect(String(died()[1]!.error)).toStartWith("TypeError: ");
    expect(await shown("svc_cp_sqlite_checkpoint_worker_restarts_total")).toBe(2);
    await checkpointsAgain();
    expect(workers.at(-1)).not.toBe(second);
    expect(checkpointer.health()).toMatchObject({ running: true, restarts: 2 });
    // one line a death, no more
    expect(died().length).toBe(2);
  } finally {
    globalThis.Worker = RealWorker;
    await checkpointer.close();
    await store.close();
  }
});
