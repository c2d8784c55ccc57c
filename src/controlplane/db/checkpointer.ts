// WAL checkpoints off the event loop. SQLite checkpoints in the connection that commits, once the
// WAL passes `wal_autocheckpoint` pages: the checkpoint copies the WAL's pages into the database
// file and fsyncs it, inside that commit. bun:sqlite is synchronous, so that commit (some
// request's) held every other request for as long as the fsync took: 0.9 s once at 1M records
// when the file had pages not yet on disk (bench/audit-scale.ts, docs/performance.md), and as
// long as the disk is busy on a shared machine. Here a worker thread with a connection of its
// own checkpoints in PASSIVE mode on a timer: WAL lets a checkpoint run beside the readers and
// the writer (it copies only what is committed, waits for no one, and blocks no one). The
// serving connection keeps an autocheckpoint only as a backstop, far above what the worker
// leaves behind, for when the worker is gone or cannot keep up.
// The worker's source is inline (a Blob URL) so the compiled binary needs no extra entry point.

/** How often the worker checkpoints. */
export const CHECKPOINT_EVERY_MS = 500;
/**
 * The serving connection's own autocheckpoint (SQLite's default is 1,000 pages): 40 MB of WAL,
 * written only if the worker is gone or behind. Ingest at its fastest writes a few MB a second.
 */
export const BACKSTOP_PAGES = 10_000;

/** What one PASSIVE checkpoint did: frames in the WAL, and how many of them are now in the database file. */
export type CheckpointResult = { busy: boolean; log: number; checkpointed: number };
export type CheckpointStatus = { checkpoints: number; last: CheckpointResult | null; error: string | null };

const WORKER_SOURCE = `
import { Database } from "bun:sqlite";
let db = null;
let timer = null;
const status = { checkpoints: 0, last: null, error: null };
const checkpoint = () => {
  try {
    const [busy, log, checkpointed] = db.query("PRAGMA wal_checkpoint(PASSIVE)").values()[0];
    status.checkpoints++;
    status.last = { busy: busy !== 0, log, checkpointed };
    status.error = null;
  } catch (e) {
    status.error = String(e && e.message || e);
  }
};
self.onmessage = (e) => {
  const m = e.data;
  if (m.type === "start") {
    db = new Database(m.path);
    // the busy handler would only wait for another checkpoint (the backstop's): skip, try next time
    db.exec("PRAGMA busy_timeout = 0");
    timer = setInterval(checkpoint, m.everyMs);
  } else if (m.type === "now") {
    checkpoint();
    postMessage({ id: m.id, status });
  } else if (m.type === "status") {
    postMessage({ id: m.id, status });
  } else if (m.type === "close") {
    clearInterval(timer);
    try { db && db.close(); } catch {}
    db = null;
    postMessage({ id: m.id, status });
  }
};
`;

/** Bun's Worker: ref()/unref() as a timer's. */
type BunWorker = Worker & { ref(): void; unref(): void };

/** The checkpoint worker of one SQLite file. Closed with the store: a connection left open would keep the WAL from being checkpointed and removed by the last close. */
export class Checkpointer {
  readonly #worker: BunWorker;
  readonly #replies = new Map<number, (s: CheckpointStatus) => void>();
  #next = 0;
  #gone = false;

  constructor(path: string, everyMs = CHECKPOINT_EVERY_MS) {
    const url = URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "application/javascript" }));
    this.#worker = new Worker(url) as BunWorker;
    // it never keeps the process alive, but while a reply is awaited (close() at the end of a command)
    this.#worker.unref();
    this.#worker.onmessage = (e: MessageEvent<{ id: number; status: CheckpointStatus }>) => {
      this.#replies.get(e.data.id)?.(e.data.status);
      this.#replies.delete(e.data.id);
      if (this.#replies.size === 0) this.#worker.unref();
    };
    // A worker that failed leaves the backstop to checkpoint; nothing else depends on it.
    this.#worker.onerror = () => this.#end();
    this.#worker.postMessage({ type: "start", path, everyMs });
  }

  /** Checkpoints now (tests), and says what the worker has done. */
  async now(): Promise<CheckpointStatus> {
    return this.#ask("now");
  }

  async status(): Promise<CheckpointStatus> {
    return this.#ask("status");
  }

  /** Stops the timer and closes the worker's connection; the worker ends. */
  async close(): Promise<void> {
    if (this.#gone) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([this.#ask("close"), new Promise((resolve) => (timer = setTimeout(resolve, 5000)))]);
    clearTimeout(timer);
    this.#end();
  }

  async #ask(type: string): Promise<CheckpointStatus> {
    if (this.#gone) return { checkpoints: 0, last: null, error: "the checkpoint worker has ended" };
    const id = this.#next++;
    this.#worker.ref();
    return new Promise((resolve) => {
      this.#replies.set(id, resolve);
      this.#worker.postMessage({ type, id });
    });
  }

  #end(): void {
    this.#gone = true;
    this.#worker.terminate();
    for (const resolve of this.#replies.values()) resolve({ checkpoints: 0, last: null, error: "the checkpoint worker has ended" });
    this.#replies.clear();
  }
}
