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
// A worker that dies (its connection cannot open, a crash) is logged as one line through the
// store's logger and started again after a delay that doubles up to a minute (`health()` says
// how it stands; the control plane's /metrics shows it): meanwhile only the backstop checkpoints.
import type { Logger } from "../../log/index.ts";

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
/** Whether the worker runs now, how often it was started again, and why it last ended. */
export type CheckpointerHealth = { running: boolean; restarts: number; lastError: string | null };

/** The delay before the first restart, doubled each time up to `max` (reset once a worker has lived `max`). */
export const RESTART_DELAY_MS = { first: 1_000, max: 60_000 };

export type CheckpointerOptions = { everyMs?: number; log?: Pick<Logger, "error">; restartDelayMs?: { first: number; max: number } };

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
    try {
      db = new Database(m.path);
    } catch (e) {
      // said to the parent as one line, which ends this worker and starts another later
      postMessage({ failed: (e && e.name || "Error") + ": " + (e && e.message || e) });
      return;
    }
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

/** One Blob URL for every worker of the process. */
let workerUrl: string | undefined;

const ENDED: CheckpointStatus = { checkpoints: 0, last: null, error: "the checkpoint worker has ended" };

/** What a worker's error event says, in one line: Bun's message also quotes the source and a stack. */
function errorText(e: ErrorEvent): string {
  if (e.error instanceof Error) return `${e.error.name}: ${e.error.message}`.slice(0, 300);
  const lines = String(e.message ?? "").split("\n");
  return (lines.find((l) => /^\w*Error: /.test(l.trim())) ?? lines.find((l) => l.trim()) ?? "unknown error").trim().slice(0, 300);
}

/** The checkpoint worker of one SQLite file. Closed with the store: a connection left open would keep the WAL from being checkpointed and removed by the last close. */
export class Checkpointer {
  readonly #path: string;
  readonly #everyMs: number;
  readonly #log: Pick<Logger, "error"> | undefined;
  readonly #delays: { first: number; max: number };
  readonly #replies = new Map<number, (s: CheckpointStatus) => void>();
  #worker: BunWorker | null = null;
  /** Counts the workers started: events of one that ended are not taken for the next one's. */
  #generation = 0;
  #startedAt = 0;
  #next = 0;
  #closed = false;
  #delay: number;
  #restart: ReturnType<typeof setTimeout> | null = null;
  #restarts = 0;
  #lastError: string | null = null;

  constructor(path: string, options: CheckpointerOptions = {}) {
    this.#path = path;
    this.#everyMs = options.everyMs ?? CHECKPOINT_EVERY_MS;
    this.#log = options.log;
    this.#delays = options.restartDelayMs ?? RESTART_DELAY_MS;
    this.#delay = this.#delays.first;
    this.#start();
  }

  #start(): void {
    this.#restart = null;
    const generation = ++this.#generation;
    workerUrl ??= URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "application/javascript" }));
    const worker = new Worker(workerUrl) as BunWorker;
    this.#worker = worker;
    this.#startedAt = Date.now();
    // it never keeps the process alive, but while a reply is awaited (close() at the end of a command)
    worker.unref();
    worker.onmessage = (e: MessageEvent<{ id: number; status: CheckpointStatus } | { failed: string }>) => {
      if ("failed" in e.data) return this.#ended(generation, e.data.failed);
      this.#replies.get(e.data.id)?.(e.data.status);
      this.#replies.delete(e.data.id);
      if (this.#replies.size === 0) worker.unref();
    };
    worker.onerror = (e) => {
      e.preventDefault();
      this.#ended(generation, errorText(e));
    };
    // a worker that ends without an error event (terminated, its thread gone)
    worker.addEventListener("close", () => this.#ended(generation, "the worker thread exited"));
    worker.postMessage({ type: "start", path: this.#path, everyMs: this.#everyMs });
  }

  /** A worker died: one line in the log, and a new worker after the delay. */
  #ended(generation: number, error: string): void {
    if (generation !== this.#generation || this.#closed) return;
    this.#generation++;
    this.#worker?.terminate();
    this.#worker = null;
    this.#answerAll();
    if (Date.now() - this.#startedAt >= this.#delays.max) this.#delay = this.#delays.first;
    const delay = this.#delay;
    this.#delay = Math.min(delay * 2, this.#delays.max);
    this.#lastError = error;
    this.#restarts++;
    this.#log?.error("sqlite checkpoint worker ended; it is started again, meanwhile only the serving connection's backstop checkpoints", {
      database: this.#path,
      error,
      restart_in_ms: delay,
      restarts: this.#restarts,
    });
    this.#restart = setTimeout(() => this.#start(), delay);
    this.#restart.unref();
  }

  /** Whether the worker runs, how often it was started again and why it last ended. */
  health(): CheckpointerHealth {
    return { running: this.#worker !== null, restarts: this.#restarts, lastError: this.#lastError };
  }

  /** Checkpoints now (tests), and says what the worker has done. */
  async now(): Promise<CheckpointStatus> {
    return this.#ask("now");
  }

  async status(): Promise<CheckpointStatus> {
    return this.#ask("status");
  }

  /** Stops the timer and closes the worker's connection; the worker ends, and is not started again. */
  async close(): Promise<void> {
    if (this.#closed) return;
    if (this.#restart) clearTimeout(this.#restart);
    if (this.#worker) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([this.#ask("close"), new Promise((resolve) => (timer = setTimeout(resolve, 5000)))]);
      clearTimeout(timer);
    }
    this.#closed = true;
    this.#worker?.terminate();
    this.#worker = null;
    this.#answerAll();
  }

  async #ask(type: string): Promise<CheckpointStatus> {
    const worker = this.#worker;
    if (!worker || this.#closed) return ENDED;
    const id = this.#next++;
    worker.ref();
    return new Promise((resolve) => {
      this.#replies.set(id, resolve);
      worker.postMessage({ type, id });
    });
  }

  #answerAll(): void {
    for (const resolve of this.#replies.values()) resolve(ENDED);
    this.#replies.clear();
  }
}
