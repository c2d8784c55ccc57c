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
// A WAL starts again from its beginning only when a write begins with every frame checkpointed.
// Under steady writes (a retention run beside ingest) the worker's checkpoints never find that
// moment, as commits land while each one copies and syncs: the WAL grew to the backstop every
// 3–10 s and the backstop checkpointed in some commit, on the event loop (166 times in one 5M
// retention run, 11–363 ms each; docs/performance.md). So once the WAL passes RESTART_FRAMES
// the worker says so, and the store holds new transactions (not reads: gate.ts between) while
// the worker checkpoints what was committed since its last pass, at most HOLD_MS: the next
// write starts the WAL again, and the backstop is left for a worker that is gone or stuck.
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
/** WAL frames past which the worker asks for writes to be held while it catches up, so the WAL starts again: 16 MB. */
export const RESTART_FRAMES = 4_000;
/** How long writes are held at most for that catch-up; past it they go on, and the next pass tries again. */
export const HOLD_MS = 50;

/** What one PASSIVE checkpoint did: frames in the WAL, and how many of them are now in the database file. */
export type CheckpointResult = { busy: boolean; log: number; checkpointed: number };
export type CheckpointStatus = { checkpoints: number; last: CheckpointResult | null; error: string | null };
/** Whether the worker runs now, how often it was started again, and why it last ended. */
export type CheckpointerHealth = { running: boolean; restarts: number; lastError: string | null };

/** The delay before the first restart, doubled each time up to `max` (reset once a worker has lived `max`). */
export const RESTART_DELAY_MS = { first: 1_000, max: 60_000 };

/** Runs its body while no transaction runs and none begins (sqlite.ts: the store's gate). */
export type HoldWrites = (body: () => Promise<void>) => Promise<void>;

export type CheckpointerOptions = { everyMs?: number; log?: Pick<Logger, "error">; restartDelayMs?: { first: number; max: number }; holdWrites?: HoldWrites };

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
const tick = () => {
  checkpoint();
  // all copied but the WAL not started again (commits came meanwhile): the parent holds writes for a last pass
  if (status.last && status.last.log >= restartFrames) postMessage({ behind: status.last.log });
};
let restartFrames = Infinity;
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
    restartFrames = m.restartFrames;
    timer = setInterval(tick, m.everyMs);
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
  readonly #holdWrites: HoldWrites | undefined;
  /** Set while writes are held for a catch-up: one at a time. */
  #catchingUp = false;
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
    this.#holdWrites = options.holdWrites;
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
    worker.onmessage = (e: MessageEvent<{ id: number; status: CheckpointStatus } | { failed: string } | { behind: number }>) => {
      if ("failed" in e.data) return this.#ended(generation, e.data.failed);
      if ("behind" in e.data) return this.#catchUp();
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
    // without a hold the WAL is left to the backstop, as before
    worker.postMessage({ type: "start", path: this.#path, everyMs: this.#everyMs, restartFrames: this.#holdWrites ? RESTART_FRAMES : Number.POSITIVE_INFINITY });
  }

  /**
   * The WAL is past RESTART_FRAMES: new transactions wait (reads go on, the event loop is free)
   * while the worker checkpoints what was committed since its pass, at most HOLD_MS. With all
   * copied and nothing committed after, the next write starts the WAL from its beginning.
   */
  #catchUp(): void {
    const hold = this.#holdWrites;
    if (!hold || this.#catchingUp || this.#closed) return;
    this.#catchingUp = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    void hold(async () => {
      await Promise.race([this.now(), new Promise((resolve) => (timer = setTimeout(resolve, HOLD_MS)))]);
      clearTimeout(timer);
    }).finally(() => {
      this.#catchingUp = false;
    });
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
