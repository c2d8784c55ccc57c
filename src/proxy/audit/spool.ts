// The audit spool: an append-only segment log in the SVC_PROXY_AUDIT directory. A record is
// durable (written and fdatasync'ed) before append() resolves, so a decision is answered only
// once its record survives a crash. Appends that arrive in the same tick are written together
// and share one fdatasync (group commit); a batch may be written and start its fdatasync while
// the previous batch's is still running (pipelined), and batches are answered in order, each
// only once its own fdatasync returned (spool-commit.ts).
//
// Files: seg-<n>.jsonl holds records, one JSON line each; seg-<n>.acked holds the ids the
// control plane acknowledged. A closed segment whose records are all acknowledged is deleted.
// Every start opens a new active segment; older segments are only read, so nothing is ever
// appended after a torn line of a segment. Records are opaque JSON lines with an `id`.
//
// With `preallocate` (the daemon), the next segment is prepared in the background as
// seg-spare.zeroed (spool-spare.ts): zero-filled to the segment size and fdatasync'ed, then
// hard-linked in as the next segment and written from its start. An fdatasync of a batch then
// flushes data blocks only: the file neither grows nor allocates, so there is no journal commit
// (a third of each sync's CPU on ext4 here). A clean close cuts the zeros past the last record;
// after a crash they stay and reading skips them like any zero region (below). The spare is
// never a segment (its name does not match) and a start deletes a leftover one.
//
// Memory does not grow with the backlog: only an index is kept (spool-files.ts SegmentIndex,
// 13 bytes a record: offset, length, id hash, acknowledged). The shipper's batches are read
// back from the segment files (spool-backlog.ts), and the start streams each segment a chunk
// at a time (spool-load.ts); the daemon takes appends before that load ends
// (loadInBackground), so a long backlog never delays readiness, and ships once it is done.
// Until then `depth` counts what is indexed so far and `indexing` says so (`spool_indexing` in
// /v1/policy and the heartbeat).
//
// A full disk (ENOSPC, EDQUOT; spool-space.ts): the batch that hit it is refused to its
// callers (SpoolFullError, 503 spool_full) and cut off; the active segment is closed, so it can be
// deleted once shipped; further appends are refused at once while the spool is full.
// Shipping needs no new space: reading is free, an acknowledgement of a closed segment's last
// records deletes the segment, and seg-<n>.acked is written only as a hint (when that write
// fails, the acknowledgement is kept in memory; after a restart the control plane, which
// deduplicates by id, acknowledges those records again). The spool takes records again by
// itself once RESUME_FREE_BYTES (1 MiB) are free, checked every second and after each deletion.
//
// A crash mid-write leaves at most the last, unsynced batches of a file damaged (never
// acknowledged to a caller): a torn line, or a region of zero bytes where the filesystem had
// extended the file but not yet written its data (delayed allocation, preallocation). Reading
// treats NUL bytes like line ends (JSON text never holds a raw NUL) and skips every piece that
// is not a whole record, so a complete record is kept even when zeros touch it. The files that
// are appended to across restarts (seg-<n>.acked, rejected.jsonl) have such a damaged tail cut
// back to their last complete line at open, so the next append never glues onto it; after a
// failed acknowledgement append, the next one starts with a line end, for the same reason. In a
// running process, a batch whose write or sync failed (disk full, I/O error) is refused to its
// callers, with every batch written after it, and cut off the active segment before the next
// batch (or the next batch goes to a new segment), for the same reason.
// rejected.jsonl holds records set aside ({rejected_at, reason, record} per line): refused by
// the control plane's verdict on the record (malformed, not this installation's, too old, id
// taken; never for clock skew, which is retried), or of another installation. The shipper
// never sends them again by itself; an operator reads them, and `svc proxy spool replay`
// appends them to the spool again once the cause is fixed (spool-replay.ts). Writing it needs
// space: on a full disk such a record stays spooled until it can be set aside.
import { type FileHandle, mkdir, open } from "node:fs/promises";
import { fdatasyncSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { AuditRecord } from "../../contract/audit.ts";
import { fsyncDir } from "../durable-file.ts";
import { segName } from "./spool-files.ts";
import { DEFAULT_LOW_SPACE_BYTES, SPACE_CHECK_MS, SpoolSpace, type SpoolHealth } from "./spool-space.ts";
import { type ActiveSegment, type CommitHost, GroupCommit } from "./spool-commit.ts";
import { type SetAside, SpoolBacklog, type SpooledRecord } from "./spool-backlog.ts";
import { listOlder, loadOlder } from "./spool-load.ts";
import { SpareSegment } from "./spool-spare.ts";

export { REJECTED_FILE, SPARE_FILE } from "./spool-files.ts";
export type { SetAside, SpooledRecord } from "./spool-backlog.ts";

export const DEFAULT_SEGMENT_MAX_BYTES = 4 * 1024 * 1024;

export type SpoolOptions = {
  segmentMaxBytes?: number;
  /** Writes one batch's text to the active segment; tests inject failures (default: write it all). */
  writeBatch?: (fd: number, buf: Buffer, position: number) => void;
  /** Syncs the active segment; tests slow it down (default: fdatasync in the thread pool). */
  syncBatch?: (fh: FileHandle) => Promise<void>;
  /**
   * Syncs the active segment on the event loop, for a batch that finds the spool quiet
   * (spool-commit.ts). Default: fdatasyncSync, unless `syncBatch` is given (then only it is used).
   */
  syncBatchNow?: ((fh: FileHandle) => void) | null;
  /** Quiet means no batch settled for this long (default spool-commit.ts QUIET_MS); tests set it. */
  quietMs?: number;
  /** Free bytes of the spool's filesystem; tests stand in for statfs (default: statfs f_bavail). */
  freeBytes?: (dir: string) => number | null;
  /** Below this many free bytes the spool reports `low` (default 64 MiB). */
  lowSpaceBytes?: number;
  /**
   * Take appends at once and index the backlog of earlier runs after (the daemon: a long
   * backlog never delays readiness); unshipped() and ack() wait for it. Default: open() waits.
   */
  loadInBackground?: boolean;
  /** The spool's space state changed (ok, low, full): the daemon logs it. */
  onHealthChange?: (h: SpoolHealth, previous: SpoolHealth["state"]) => void;
  /**
   * Write records into segments zero-filled and synced ahead of time (the daemon). An
   * fdatasync then only flushes data blocks: the file neither grows nor allocates, so no
   * journal commit, which cost about a third of each sync's CPU on the bench's ext4 volume.
   * The next segment is prepared in the background (spool-spare.ts); the first one of a run is
   * a plain file until the spare is ready. A crash leaves a zero tail, which reading skips.
   */
  preallocate?: boolean;
};

// At the batch's own offset: a preallocated segment is not opened for appending, and after a
// failed batch is cut off the next one must start where it started. (Linux writes at the end
// of an O_APPEND file whatever the position: the plain segments append as before.)
function writeFully(fd: number, buf: Buffer, position: number): void {
  for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off, position + off);
}

/**
 * The spool: appends (spool-commit.ts) into the active segment; the records not yet
 * acknowledged (spool-backlog.ts) read back, acknowledged and set aside; the start
 * (spool-load.ts), the disk space (spool-space.ts) and the spare segment (spool-spare.ts).
 */
export class AuditSpool {
  private readonly backlog: SpoolBacklog;
  private readonly space: SpoolSpace;
  /** preallocate: the next segment, prepared ahead of time. */
  private readonly spare: SpareSegment | null;
  private commit!: GroupCommit;
  private timer: ReturnType<typeof setInterval> | null = null;
  private closed = false;
  /** preallocate: the active segment is a spare, its tail (past what is written) zeros. */
  private activePrealloc = false;
  /** The older segments' load has ended (done, failed or stopped by close). */
  private loadDone = false;

  private constructor(
    readonly dir: string,
    private readonly o: Required<Pick<SpoolOptions, "segmentMaxBytes" | "writeBatch" | "syncBatch" | "lowSpaceBytes">> & SpoolOptions,
  ) {
    this.space = new SpoolSpace(dir, o);
    this.backlog = new SpoolBacklog(dir, () => this.space.check());
    this.spare = o.preallocate ? new SpareSegment(dir, o.segmentMaxBytes, () => this.closed) : null;
  }

  static async open(dir: string, opts: SpoolOptions = {}): Promise<AuditSpool> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const spool = new AuditSpool(dir, {
      ...opts,
      segmentMaxBytes: opts.segmentMaxBytes ?? DEFAULT_SEGMENT_MAX_BYTES,
      writeBatch: opts.writeBatch ?? writeFully,
      syncBatch: opts.syncBatch ?? (async (fh) => fh.datasync()),
      syncBatchNow: opts.syncBatchNow !== undefined ? opts.syncBatchNow : opts.syncBatch ? null : (fh) => fdatasyncSync(fh.fd),
      lowSpaceBytes: opts.lowSpaceBytes ?? DEFAULT_LOW_SPACE_BYTES,
    });
    // Appends work once the new active segment is open; the older segments are indexed after.
    const older = await listOlder(dir);
    spool.commit = new GroupCommit(spool.commitHost(), await spool.openActive((older.at(-1) ?? 0) + 1));
    spool.loaded = loadOlder(spool.backlog, older, () => spool.closed).finally(() => {
      spool.loadDone = true;
    });
    if (!opts.loadInBackground) await spool.loaded;
    else spool.loaded.catch(() => {}); // reported to whoever awaits it (unshipped, the daemon)
    spool.timer = setInterval(() => spool.space.check(), SPACE_CHECK_MS);
    spool.timer.unref?.();
    return spool;
  }

  /** Settles once the backlog of earlier runs is indexed (at once unless loadInBackground). */
  loaded: Promise<void> = Promise.resolve();

  /** Acknowledgements kept in memory only, because writing seg-<n>.acked failed (full disk). */
  get acksNotWritten(): number {
    return this.backlog.acksNotWritten;
  }

  /** fdatasync calls made for appends (the group-commit tests count them). */
  get appendSyncs(): number {
    return this.commit.syncs;
  }

  /**
   * Records not yet acknowledged by the control plane (spooled or being written). While the
   * backlog of earlier runs is still being indexed (`indexing`), only what is indexed so far:
   * a lower bound, never a made-up 0.
   */
  get depth(): number {
    return this.backlog.unacked + this.commit.writing + (this.backlog.scanning?.unacked ?? 0);
  }

  /** The backlog of earlier runs is still being indexed (loadInBackground): `depth` counts what is indexed so far. */
  get indexing(): boolean {
    return !this.loadDone;
  }

  /** Records on disk not yet acknowledged: what the shipper may read now. */
  get spooled(): number {
    return this.backlog.unacked;
  }

  /** Durably append one record; resolves once it is on disk. */
  async append(record: AuditRecord): Promise<void> {
    return this.appendLine(record.id, JSON.stringify(record));
  }

  /** Durably append one record given as its JSON text (no line end); resolves once it is on disk. */
  async appendLine(id: string, json: string): Promise<void> {
    if (this.closed) return Promise.reject(new Error("audit spool is closed"));
    if (this.space.full) return Promise.reject(this.space.fullError());
    return this.commit.append(id, json);
  }

  /** Space state for /readyz, `svc policy show` and the heartbeat (free bytes sampled at most once a second). */
  health(): SpoolHealth {
    return this.space.health();
  }

  /** The oldest unacknowledged records, parsed (unshippedLines). */
  async unshipped(limit: number): Promise<AuditRecord[]> {
    return (await this.unshippedLines(limit)).map((s) => s.record);
  }

  /**
   * The oldest unacknowledged records, in append order, read back from their segments with
   * their exact lines: at most `limit`, and no more than MAX_READ_BYTES (but at least one).
   */
  async unshippedLines(limit: number): Promise<SpooledRecord[]> {
    await this.loaded;
    return this.backlog.unshippedLines(limit);
  }

  /** The control plane holds these ids: drop them, and delete segments left with nothing. */
  async ack(ids: readonly string[]): Promise<void> {
    await this.loaded;
    return this.backlog.ack(ids);
  }

  /**
   * Set records aside for good in rejected.jsonl, kept as their spooled lines, then acknowledge
   * them (spool-backlog.ts). This needs space; on a full disk it throws and the records stay spooled.
   */
  async reject(entries: readonly SetAside[], at: Date = new Date()): Promise<void> {
    return this.backlog.reject(entries, at);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.loaded.catch(() => {}); // a background load stops at its next segment
    await this.commit.close();
    await this.spare?.close();
  }

  // ——— writing (spool-commit.ts does the batches) ———

  private commitHost(): CommitHost {
    return {
      segmentMaxBytes: this.o.segmentMaxBytes,
      writeBatch: this.o.writeBatch,
      syncBatch: this.o.syncBatch,
      ...(this.o.syncBatchNow ? { syncBatchNow: this.o.syncBatchNow } : {}),
      ...(this.o.quietMs !== undefined ? { quietMs: this.o.quietMs } : {}),
      committed: (seq, records) => this.backlog.committed(seq, records),
      refusal: (error) => this.space.refusal(error),
      rotate: async (old) => this.rotate(old),
      // The segment that filled the disk is closed, so it can be deleted once shipped.
      rotateAfterFailure: () => this.space.full,
      // The run's first segment is a plain file: move to the spare as soon as it is ready.
      wantsRotation: () => (this.spare?.ready ?? false) && !this.activePrealloc,
      // A clean close leaves no zero tail behind.
      closing: async (active, bytes) => {
        if (this.activePrealloc) await active.fh.truncate(bytes).catch(() => {});
      },
    };
  }

  private async openActive(seq: number): Promise<ActiveSegment> {
    const taken = this.spare?.ready ? await this.spare.take(seq) : null;
    this.activePrealloc = taken !== null;
    // "ax": a new file, never an existing one that might end in a torn line.
    let fh: FileHandle | null = taken;
    while (!fh) {
      fh = await open(join(this.dir, segName(seq, "jsonl")), "ax", 0o600).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== "EEXIST") throw e;
        seq++;
        return null;
      });
    }
    fsyncDir(this.dir);
    this.backlog.opened(seq);
    if (!this.space.full) this.spare?.prepare(); // never while the disk is full
    return { seq, fh };
  }

  private async rotate(old: ActiveSegment): Promise<ActiveSegment> {
    const next = await this.openActive(old.seq + 1);
    await old.fh.close();
    await this.backlog.close(old.seq);
    return next;
  }
}
