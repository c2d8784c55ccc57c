// Pipelined group commit on the spool's active segment (spool.ts has the file format and the
// crash cases). Appends that arrive in the same tick form one batch: written in place, then
// fdatasync'ed off the event loop. The next batch may be written and start its fdatasync
// while the previous one's still runs (at most MAX_IN_FLIGHT); batches are answered in order,
// each only once its own fdatasync returned, so every answered record is durable.
// A batch that finds the spool quiet (nothing in flight, the last batch settled at least
// QUIET_MS before) is synced on the event loop instead (syncBatchNow): the thread pool's two
// hand-offs (wake a worker, wake the loop when it is done) are the latency of a lone call, e.g.
// a model call's time to first token; under load the loop stays free while a sync runs.
// An inline sync that is slow (SLOW_INLINE_SYNC_MS: a disk in trouble) would stall every
// request the process serves, /readyz included, so after one the batches go to the thread pool
// for INLINE_PAUSE_MS: a slow disk stalls the loop once a minute at most, not once a batch.
// A failed write or sync refuses its batch and every batch written after it; no batch starts
// until the tail is cut back to the last good batch (or, when that fails or the disk is full,
// the spool moves to a new segment). At the size limit the spool rotates between batches.
import type { FileHandle } from "node:fs/promises";

/** Batches written and syncing at once: one syncing while the next is written is the gain. */
export const MAX_IN_FLIGHT = 2;
/** A batch is synced on the event loop when the previous one settled at least this long before. */
export const QUIET_MS = 5;
/** An inline sync that takes this long stops inline syncs for INLINE_PAUSE_MS (a sync is ~0.1–2 ms on a sound disk). */
export const SLOW_INLINE_SYNC_MS = 20;
export const INLINE_PAUSE_MS = 60_000;

export type ActiveSegment = { seq: number; fh: FileHandle };
export type CommittedRecord = { id: string; offset: number; length: number };

/** What the spool provides: the I/O, its index, its notion of a full disk, new segments. */
export type CommitHost = {
  segmentMaxBytes: number;
  /** How long the spool must have been without a batch to sync the next one on the event loop (default QUIET_MS). */
  quietMs?: number;
  /** The clock (ms) for quiet and slow syncs; default performance.now. */
  now?: () => number;
  /** Write `buf` at byte `position` of the active segment (its end). */
  writeBatch(fd: number, buf: Buffer, position: number): void;
  syncBatch(fh: FileHandle): Promise<void>;
  /** The same sync, blocking (for a batch that finds the spool quiet); absent: always syncBatch. */
  syncBatchNow?(fh: FileHandle): void;
  /** A batch is durable: its records (lines without their "\n") at these offsets of segment `seq`. */
  committed(seq: number, records: CommittedRecord[]): void;
  /** What the callers of a failed batch get (the spool turns ENOSPC into SpoolFullError). */
  refusal(error: unknown): unknown;
  /** Open the next segment and close `old`, the active one; no batch is in flight. */
  rotate(old: ActiveSegment): Promise<ActiveSegment>;
  /** After a failure, move to a new segment even when the tail could be cut (a full disk). */
  rotateAfterFailure(): boolean;
  /** Move to a new segment before the size limit (a preallocated one is ready); optional. */
  wantsRotation?(): boolean;
  /** The active segment is closing with `bytes` written: cut what lies past them (a preallocated tail). */
  closing?(active: ActiveSegment, bytes: number): Promise<void>;
};

type Pending = { id: string; line: string; resolve: () => void; reject: (e: unknown) => void };
type Batch = { items: Pending[]; lengths: number[]; start: number; end: number; settled: boolean; error: unknown };

export class GroupCommit {
  /** fdatasync calls that committed a batch (the group-commit tests count them). */
  syncs = 0;
  private pending: Pending[] = [];
  private readonly inFlight: Batch[] = [];
  private scheduled = false;
  /** Cleaning a failed tail or rotating: no batch starts meanwhile. */
  private maintenance: Promise<void> | null = null;
  /** A batch failed: the active segment may end in part of it, past `bytes`. */
  private failure: unknown = null;
  /** Answering in order met a failed batch: the batches after it are refused too. */
  private refusing: unknown = null;
  /** The end of the last committed batch (the clean end) and of the last written one. */
  private bytes = 0;
  private written = 0;
  private readonly idleWaiters: (() => void)[] = [];
  /** When the last batch settled (now()). */
  private lastSettled = Number.NEGATIVE_INFINITY;
  /** No inline sync before this time (set after a slow one). */
  private inlineAfter = Number.NEGATIVE_INFINITY;
  /** Inline syncs that took SLOW_INLINE_SYNC_MS or more (each paused inline syncs). */
  slowInlineSyncs = 0;
  private readonly now: () => number;

  constructor(
    private readonly host: CommitHost,
    private active: ActiveSegment,
  ) {
    this.now = host.now ?? (() => performance.now());
  }

  get activeSeq(): number {
    return this.active.seq;
  }

  /** Records accepted but not yet answered. */
  get writing(): number {
    let n = this.pending.length;
    for (const b of this.inFlight) n += b.items.length;
    return n;
  }

  /** Resolves once the record (a JSON line without its "\n") is durable. */
  async append(id: string, json: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.pending.push({ id, line: `${json}\n`, resolve, reject });
      this.schedule();
    });
  }

  /** Every accepted record answered and no maintenance running; then the active file is closed. */
  async close(): Promise<void> {
    while (this.pending.length > 0 || this.inFlight.length > 0 || this.maintenance) {
      await new Promise<void>((r) => this.idleWaiters.push(r));
    }
    await this.host.closing?.(this.active, this.bytes);
    await this.active.fh.close();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // Let every append of this tick join the batch.
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  /** Start batches while there is room in flight; clean up or rotate when the file needs it. */
  private pump(): void {
    if (this.maintenance) return;
    if (this.failure !== null || this.written >= this.host.segmentMaxBytes || this.host.wantsRotation?.()) {
      if (this.inFlight.length === 0) this.maintain();
      return;
    }
    while (this.pending.length > 0 && this.inFlight.length < MAX_IN_FLIGHT && this.failure === null) this.startBatch();
    this.notifyIdle();
  }

  private startBatch(): void {
    const items = this.pending;
    this.pending = [];
    const buf = Buffer.from(items.map((p) => p.line).join(""));
    const b: Batch = { items, lengths: items.map((p) => Buffer.byteLength(p.line)), start: this.written, end: this.written + buf.length, settled: false, error: null };
    this.inFlight.push(b);
    try {
      // A batch is a few KB into the page cache: written in place (microseconds), which
      // spares a thread-pool round trip per commit; only the fdatasync goes off-thread.
      this.host.writeBatch(this.active.fh.fd, buf, b.start);
    } catch (e) {
      this.batchDone(b, e);
      return;
    }
    this.written = b.end;
    // The clock is read only when the batch could be synced inline, and once more after it.
    const syncNow = this.inFlight.length === 1 ? this.host.syncBatchNow : undefined;
    const start = syncNow ? this.now() : 0;
    if (syncNow && start >= this.inlineAfter && start - this.lastSettled >= (this.host.quietMs ?? QUIET_MS)) {
      let error: unknown = null;
      try {
        syncNow(this.active.fh);
      } catch (e) {
        error = e;
      }
      const end = this.now();
      if (end - start >= SLOW_INLINE_SYNC_MS) {
        this.slowInlineSyncs++;
        this.inlineAfter = end + INLINE_PAUSE_MS;
      }
      this.batchDone(b, error, end);
      return;
    }
    this.host.syncBatch(this.active.fh).then(
      () => this.batchDone(b, null),
      (e) => this.batchDone(b, e),
    );
  }

  /** Answer finished batches in order: a batch after a failed one is refused as well. */
  private batchDone(b: Batch, error: unknown, at = this.now()): void {
    b.settled = true;
    b.error = error;
    this.lastSettled = at;
    if (error !== null) this.failure ??= error;
    while (this.inFlight[0]?.settled) {
      const done = this.inFlight.shift()!;
      if (done.error !== null) this.refusing ??= done.error;
      if (this.refusing === null) this.commit(done);
      else this.refuse(done.items, done.error ?? this.refusing);
    }
    if (this.inFlight.length === 0) this.refusing = null;
    this.pump();
  }

  private commit(b: Batch): void {
    this.syncs++;
    let offset = b.start;
    const records = b.items.map((p, k) => {
      const r = { id: p.id, offset, length: b.lengths[k]! - 1 }; // the line without its "\n"
      offset += b.lengths[k]!;
      return r;
    });
    this.host.committed(this.active.seq, records);
    this.bytes = b.end;
    for (const p of b.items) p.resolve();
  }

  private refuse(items: Pending[], error: unknown): void {
    const e = this.host.refusal(error);
    for (const p of items) p.reject(e);
  }

  /** After a failure: cut the torn tail. At the size limit: a new segment. */
  private maintain(): void {
    const failed = this.failure !== null;
    this.maintenance = (failed ? this.cleanTail() : this.rotate()).then(
      () => {
        this.maintenance = null;
        this.pump();
      },
      (e) => {
        // Neither worked (the disk is still failing): refuse what waits; the next append tries again.
        this.maintenance = null;
        this.refuse(this.pending.splice(0), e);
        this.notifyIdle();
      },
    );
  }

  /**
   * Cut the active segment back to its last whole batch; when even that fails, or the host
   * asks for it (a full disk: the segment can then be deleted once shipped), continue in a new
   * segment. Either way the next record starts on a line of its own. Throws when neither works.
   */
  private async cleanTail(): Promise<void> {
    try {
      await this.active.fh.truncate(this.bytes);
      await this.active.fh.datasync();
      this.written = this.bytes;
      if (this.host.rotateAfterFailure() && this.bytes > 0) await this.rotate();
    } catch {
      await this.rotate();
    }
    this.failure = null;
  }

  private async rotate(): Promise<void> {
    this.active = await this.host.rotate(this.active);
    this.bytes = 0;
    this.written = 0;
    this.failure = null;
  }

  private notifyIdle(): void {
    if (this.pending.length > 0 || this.inFlight.length > 0 || this.maintenance) return;
    for (const w of this.idleWaiters.splice(0)) w();
  }
}
