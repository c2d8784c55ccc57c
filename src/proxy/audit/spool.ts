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
// seg-spare.zeroed: zero-filled to the segment size and fdatasync'ed, then hard-linked in as the
// next segment and written from its start. An fdatasync of a batch then flushes data blocks
// only: the file neither grows nor allocates, so there is no journal commit (a third of each
// sync's CPU on ext4 here). A clean close cuts the zeros past the last record; after a crash
// they stay and reading skips them like any zero region (below). The spare is never a segment
// (its name does not match) and a start deletes a leftover one.
//
// Memory does not grow with the backlog: only an index is kept (spool-files.ts SegmentIndex,
// 13 bytes a record: offset, length, id hash, acknowledged). The shipper's batches are read
// back from the segment files, and the start streams each segment a chunk at a time; the
// daemon takes appends before that load ends (loadInBackground), so a long backlog never
// delays readiness, and ships once it is done. Until then `depth` counts what is indexed so
// far and `indexing` says so (`spool_indexing` in /v1/policy and the heartbeat).
//
// A full disk (ENOSPC, EDQUOT): the batch that hit it is refused to its callers
// (SpoolFullError, 503 spool_full) and cut off; the active segment is closed, so it can be
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
// rejected.jsonl holds records set aside for good ({rejected_at, reason, record} per line):
// refused for good by the control plane (malformed, not this installation's, too old, id
// taken; never for clock skew, which is retried), or of another installation. They are never
// shipped again and never deleted by the proxy; an operator reads them. Writing it needs space:
// on a full disk such a record stays spooled until it can be set aside.
import { type FileHandle, link, mkdir, open, readdir, rm } from "node:fs/promises";
import { fdatasyncSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { AuditRecord } from "../../contract/audit.ts";
import { fsyncDir } from "../durable-file.ts";
import { idHash, indexSegment, readRange, recordId, repairTail, SEGMENT_FILE, SegmentIndex, segName } from "./spool-files.ts";
import { DEFAULT_LOW_SPACE_BYTES, freeBytes, isNoSpace, RESUME_FREE_BYTES, SpoolFullError, type SpoolHealth } from "./spool-space.ts";
import { type ActiveSegment, type CommitHost, GroupCommit } from "./spool-commit.ts";

export { completeLength, spoolLines } from "./spool-files.ts";

export const DEFAULT_SEGMENT_MAX_BYTES = 4 * 1024 * 1024;
export const REJECTED_FILE = "rejected.jsonl";
/** The next segment, zero-filled and synced ahead of time (preallocate); not a segment until renamed. */
export const SPARE_FILE = "seg-spare.zeroed";
const ZERO_CHUNK = 1024 * 1024;
/** A shipping batch read back is cut at this many bytes (at least one record). */
export const MAX_READ_BYTES = 4 * 1024 * 1024;
const SPACE_CHECK_MS = 1000;
/** Records handed out by unshipped() remembered for ack(): a few batches' worth. */
const MAX_LENT = 50_000;

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
   * The next segment is prepared in the background; the first one of a run is a plain file
   * until the spare is ready. A crash leaves a zero tail, which reading skips like any other.
   */
  preallocate?: boolean;
};

type Location = { seg: SegmentIndex; i: number };

/**
 * A record read back from the spool: parsed (the shipper checks its owner, rejected.jsonl
 * names it) and its line exactly as spooled, which is the record's JSON: the shipper sends
 * that text as is instead of serializing the record again.
 */
export type SpooledRecord = { record: AuditRecord; line: string };

/** A spooled record set aside for good (rejected.jsonl), with the reason. */
export type SetAside = SpooledRecord & { reason: string };

function parseRecord(line: string): AuditRecord | null {
  try {
    const r = JSON.parse(line) as AuditRecord | null;
    return r !== null && typeof r === "object" && typeof r.id === "string" ? r : null;
  } catch {
    return null;
  }
}

// At the batch's own offset: a preallocated segment is not opened for appending, and after a
// failed batch is cut off the next one must start where it started. (Linux writes at the end
// of an O_APPEND file whatever the position: the plain segments append as before.)
function writeFully(fd: number, buf: Buffer, position: number): void {
  for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off, position + off);
}

export class AuditSpool {
  /** Acknowledgements kept in memory only, because writing seg-<n>.acked failed (full disk). */
  acksNotWritten = 0;
  private readonly segments = new Map<number, SegmentIndex>();
  /** Records unshipped() handed out, by id, until acknowledged: the shipper acks only these. */
  private readonly lent = new Map<string, Location>();
  /** Segments whose .acked file may end in a torn append of this process. */
  private readonly ackTorn = new Set<number>();
  private unacked = 0;
  private commit!: GroupCommit;
  /** Set by a write that found no room; appends are refused until space returns. */
  private full = false;
  private lastState: SpoolHealth["state"] = "ok";
  private freeCache: { at: number; bytes: number | null } = { at: 0, bytes: null };
  private timer: ReturnType<typeof setInterval> | null = null;
  private closed = false;
  /** preallocate: SPARE_FILE is zero-filled and synced; its preparation while it runs. */
  private spareReady = false;
  private spareWork: Promise<void> | null = null;
  /** preallocate: the active segment is a spare, its tail (past what is written) zeros. */
  private activePrealloc = false;
  /** The older segment load() is scanning now: its records count in `depth` as they are read. */
  private scanning: SegmentIndex | null = null;
  /** load() has ended (done, failed or stopped by close). */
  private loadDone = false;

  private constructor(
    readonly dir: string,
    private readonly o: Required<Pick<SpoolOptions, "segmentMaxBytes" | "writeBatch" | "syncBatch" | "lowSpaceBytes">> & SpoolOptions,
  ) {}

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
    const older = await spool.prepare();
    spool.loaded = spool.load(older).finally(() => {
      spool.loadDone = true;
    });
    if (!opts.loadInBackground) await spool.loaded;
    else spool.loaded.catch(() => {}); // reported to whoever awaits it (unshipped, the daemon)
    spool.timer = setInterval(() => spool.checkSpace(), SPACE_CHECK_MS);
    spool.timer.unref?.();
    return spool;
  }

  /** Settles once the backlog of earlier runs is indexed (at once unless loadInBackground). */
  loaded: Promise<void> = Promise.resolve();

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
    return this.unacked + this.commit.writing + (this.scanning?.unacked ?? 0);
  }

  /** The backlog of earlier runs is still being indexed (loadInBackground): `depth` counts what is indexed so far. */
  get indexing(): boolean {
    return !this.loadDone;
  }

  /** Records on disk not yet acknowledged: what the shipper may read now. */
  get spooled(): number {
    return this.unacked;
  }

  /** Durably append one record; resolves once it is on disk. */
  async append(record: AuditRecord): Promise<void> {
    return this.appendLine(record.id, JSON.stringify(record));
  }

  /** Durably append one record given as its JSON text (no line end); resolves once it is on disk. */
  async appendLine(id: string, json: string): Promise<void> {
    if (this.closed) return Promise.reject(new Error("audit spool is closed"));
    if (this.full) return Promise.reject(new SpoolFullError(this.dir, this.free(true)));
    return this.commit.append(id, json);
  }

  /** Space state for /readyz, `svc policy show` and the heartbeat (free bytes sampled at most once a second). */
  health(): SpoolHealth {
    const free = this.free();
    const state = this.full ? "full" : free !== null && free < this.o.lowSpaceBytes ? "low" : "ok";
    if (state !== this.lastState) {
      const previous = this.lastState;
      this.lastState = state;
      this.o.onHealthChange?.({ state, path: this.dir, free_bytes: free, low_space_bytes: this.o.lowSpaceBytes }, previous);
    }
    return { state, path: this.dir, free_bytes: free, low_space_bytes: this.o.lowSpaceBytes };
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
    const runs: { seg: SegmentIndex; first: number; last: number }[] = [];
    let n = 0;
    let bytes = 0;
    outer: for (const seg of this.segments.values()) {
      for (let i = seg.head; i < seg.count; i++) {
        if (seg.acked[i]) continue;
        if (n >= limit || (n > 0 && bytes + seg.lengths[i]! > MAX_READ_BYTES)) break outer;
        const run = runs.at(-1);
        if (run && run.seg === seg && run.last === i - 1) run.last = i;
        else runs.push({ seg, first: i, last: i });
        n++;
        bytes += seg.lengths[i]!;
      }
    }
    const out: SpooledRecord[] = [];
    for (const { seg, first, last } of runs) {
      const from = seg.offsets[first]!;
      const fh = await open(join(this.dir, segName(seg.seq, "jsonl")), "r");
      try {
        const buf = await readRange(fh, from, seg.offsets[last]! + seg.lengths[last]! - from);
        for (let i = first; i <= last; i++) {
          if (seg.acked[i]) continue;
          const at = seg.offsets[i]! - from;
          const line = buf.toString("utf8", at, at + seg.lengths[i]!);
          const record = parseRecord(line);
          if (!record) {
            // Not a whole record after all (never answered to anyone): skipped, never shipped.
            if (seg.ack(i)) this.unacked--;
            continue;
          }
          if (this.lent.size >= MAX_LENT) this.lent.clear(); // ack() finds them by hash instead
          this.lent.set(record.id, { seg, i });
          out.push({ record, line });
        }
      } finally {
        await fh.close();
      }
    }
    return out;
  }

  /** The control plane holds these ids: drop them, and delete segments left with nothing. */
  async ack(ids: readonly string[]): Promise<void> {
    await this.loaded;
    const bySeg = new Map<SegmentIndex, { ids: string[]; at: number[] }>();
    for (const id of ids) {
      const loc = this.lent.get(id) ?? (await this.find(id));
      this.lent.delete(id);
      if (!loc || loc.seg.acked[loc.i] || !this.segments.has(loc.seg.seq)) continue;
      let e = bySeg.get(loc.seg);
      if (!e) bySeg.set(loc.seg, (e = { ids: [], at: [] }));
      e.ids.push(id);
      e.at.push(loc.i);
    }
    for (const [seg, e] of bySeg) {
      // A closed segment left with nothing is deleted, which needs no space; else the ids are noted first.
      const emptied = seg.closed && seg.unacked === new Set(e.at).size;
      if (!emptied) await this.writeAcks(seg.seq, e.ids);
      for (const i of e.at) if (seg.ack(i)) this.unacked--;
      // (closed may have turned true while the ids were written: a rotation after a full disk)
      if (seg.closed && seg.unacked === 0 && this.segments.has(seg.seq)) await this.dropSegment(seg.seq);
    }
  }

  /**
   * Set records aside for good: append them durably to rejected.jsonl with the reason, then
   * acknowledge them so shipping continues. A crash in between sets them aside twice, harmlessly.
   * A record is kept as its spooled `line`, the exact bytes read back (unshippedLines).
   * This needs space; on a full disk it throws and the records stay spooled.
   */
  async reject(entries: readonly SetAside[], at: Date = new Date()): Promise<void> {
    if (entries.length === 0) return;
    const when = JSON.stringify(at.toISOString());
    const entry = (e: SetAside) => `{"rejected_at":${when},"reason":${JSON.stringify(e.reason)},"record":${e.line}}\n`;
    const fh = await open(join(this.dir, REJECTED_FILE), "a", 0o600);
    try {
      await fh.appendFile(entries.map(entry).join(""));
      await fh.datasync();
    } finally {
      await fh.close();
    }
    fsyncDir(this.dir);
    await this.ack(entries.map((e) => e.record.id));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.loaded.catch(() => {}); // a background load stops at its next segment
    await this.commit.close();
    await this.spareWork;
    if (this.o.preallocate) await rm(join(this.dir, SPARE_FILE), { force: true });
  }

  // ——— writing (spool-commit.ts does the batches) ———

  private commitHost(): CommitHost {
    return {
      segmentMaxBytes: this.o.segmentMaxBytes,
      writeBatch: this.o.writeBatch,
      syncBatch: this.o.syncBatch,
      ...(this.o.syncBatchNow ? { syncBatchNow: this.o.syncBatchNow } : {}),
      ...(this.o.quietMs !== undefined ? { quietMs: this.o.quietMs } : {}),
      committed: (seq, records) => {
        const seg = this.segments.get(seq)!;
        for (const r of records) seg.add(r.offset, r.length, r.id);
        this.unacked += records.length;
      },
      refusal: (error) => {
        if (!isNoSpace(error)) return error;
        this.full = true;
        this.health();
        return new SpoolFullError(this.dir, this.free(true), error);
      },
      rotate: async (old) => this.rotate(old),
      // The segment that filled the disk is closed, so it can be deleted once shipped.
      rotateAfterFailure: () => this.full,
      // The run's first segment is a plain file: move to the spare as soon as it is ready.
      wantsRotation: () => this.spareReady && !this.activePrealloc,
      // A clean close leaves no zero tail behind.
      closing: async (active, bytes) => {
        if (this.activePrealloc) await active.fh.truncate(bytes).catch(() => {});
      },
    };
  }

  // ——— space ———

  private free(fresh = false): number | null {
    const now = Date.now();
    if (fresh || now - this.freeCache.at >= SPACE_CHECK_MS) this.freeCache = { at: now, bytes: (this.o.freeBytes ?? freeBytes)(this.dir) };
    return this.freeCache.bytes;
  }

  /** Every second, and after a segment is deleted: a full spool with room again takes records. */
  private checkSpace(): void {
    if (this.full) {
      const free = this.free(true);
      if (free !== null && free >= RESUME_FREE_BYTES) this.full = false;
    }
    this.health();
  }

  // ——— acknowledgements and segments ———

  /** An id that unshipped() did not hand out: found by its hash in the index, checked on disk. */
  private async find(id: string): Promise<Location | null> {
    const hash = idHash(id);
    for (const seg of this.segments.values()) {
      for (const i of seg.candidates(hash)) {
        const fh = await open(join(this.dir, segName(seg.seq, "jsonl")), "r");
        try {
          const buf = await readRange(fh, seg.offsets[i]!, seg.lengths[i]!);
          if (recordId(buf.toString("utf8")) === id) return { seg, i };
        } finally {
          await fh.close();
        }
      }
    }
    return null;
  }

  /** Best effort (see the top of this file): a failed write keeps the acknowledgement in memory only. */
  private async writeAcks(seq: number, ids: string[]): Promise<void> {
    try {
      const fh = await open(join(this.dir, segName(seq, "acked")), "a", 0o600);
      try {
        // After a failed append the file may end in a torn id: start on a line of our own.
        await fh.appendFile(`${this.ackTorn.has(seq) ? "\n" : ""}${ids.join("\n")}\n`);
        await fh.datasync();
        this.ackTorn.delete(seq);
      } finally {
        await fh.close();
      }
    } catch {
      this.ackTorn.add(seq);
      this.acksNotWritten += ids.length;
    }
  }

  /** preallocate: zero-fill and sync the next segment in the background (never while the disk is full). */
  private prepareSpare(): void {
    if (!this.o.preallocate || this.spareReady || this.spareWork || this.closed || this.full) return;
    const path = join(this.dir, SPARE_FILE);
    this.spareWork = (async () => {
      try {
        const fh = await open(path, "w", 0o600);
        try {
          const zeros = Buffer.alloc(Math.min(ZERO_CHUNK, this.o.segmentMaxBytes));
          for (let at = 0; at < this.o.segmentMaxBytes && !this.closed; at += zeros.length) await fh.write(zeros, 0, Math.min(zeros.length, this.o.segmentMaxBytes - at), at);
          await fh.datasync();
        } finally {
          await fh.close();
        }
        this.spareReady = !this.closed;
      } catch {
        // No room for it (or another failure): the next segment is a plain file; tried again at the next rotation.
        await rm(path, { force: true }).catch(() => {});
      } finally {
        this.spareWork = null;
      }
    })();
  }

  /** The spare as segment `seq` (a hard link, never over an existing file), or null when taken or gone. */
  private async takeSpare(seq: number): Promise<FileHandle | null> {
    this.spareReady = false;
    const spare = join(this.dir, SPARE_FILE);
    try {
      await link(spare, join(this.dir, segName(seq, "jsonl")));
    } catch {
      return null;
    } finally {
      await rm(spare, { force: true });
    }
    return open(join(this.dir, segName(seq, "jsonl")), "r+");
  }

  private async openActive(seq: number): Promise<ActiveSegment> {
    const taken = this.spareReady ? await this.takeSpare(seq) : null;
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
    this.segments.set(seq, new SegmentIndex(seq));
    this.prepareSpare();
    return { seq, fh };
  }

  private async rotate(old: ActiveSegment): Promise<ActiveSegment> {
    const next = await this.openActive(old.seq + 1);
    await old.fh.close();
    const seg = this.segments.get(old.seq)!;
    seg.closed = true;
    seg.trim();
    if (seg.unacked === 0) await this.dropSegment(old.seq);
    return next;
  }

  private async dropSegment(seq: number): Promise<void> {
    this.segments.delete(seq);
    await rm(join(this.dir, segName(seq, "jsonl")), { force: true });
    await rm(join(this.dir, segName(seq, "acked")), { force: true });
    this.checkSpace();
  }

  /**
   * At open: cut rejected.jsonl's damaged tail and open a new active segment (appends work from
   * here on); returns the older segments, oldest first, for load().
   */
  private async prepare(): Promise<number[]> {
    const seqs = new Set<number>();
    for (const n of await readdir(this.dir)) {
      const m = SEGMENT_FILE.exec(n);
      if (m) seqs.add(Number(m[1]));
    }
    const sorted = [...seqs].sort((a, b) => a - b);
    await repairTail(join(this.dir, REJECTED_FILE));
    await rm(join(this.dir, SPARE_FILE), { force: true }); // a previous run's, maybe half written
    this.commit = new GroupCommit(this.commitHost(), await this.openActive((sorted.at(-1) ?? 0) + 1));
    return sorted;
  }

  /** Rebuild the index of the older segments, streaming each one (flat memory); stops at close(). */
  private async load(seqs: number[]): Promise<void> {
    for (const seq of seqs) {
      if (this.closed) return;
      let seg: SegmentIndex | null;
      try {
        seg = await indexSegment(this.dir, seq, (s) => (this.scanning = s));
      } catch (e) {
        this.scanning = null;
        throw e;
      }
      if (!seg) continue;
      this.segments.set(seq, seg);
      this.scanning = null; // counted in unacked from here on, in the same step
      this.unacked += seg.unacked;
      if (seg.unacked === 0) await this.dropSegment(seq);
      else await repairTail(join(this.dir, segName(seq, "acked"))); // later acks of this segment append here
    }
    // The active segment was opened first: put every segment back in append order for unshipped().
    const all = [...this.segments.values()].sort((a, b) => a.seq - b.seq);
    this.segments.clear();
    for (const seg of all) this.segments.set(seg.seq, seg);
  }
}
