// The audit spool: an append-only segment log in the SVC_PROXY_AUDIT directory. A record is
// durable (written and fdatasync'ed) before append() resolves, so a decision is answered only
// once its record survives a crash. Appends that arrive while a sync is running, or in the
// same tick, are written together and share one fdatasync (group commit).
//
// Files: seg-<n>.jsonl holds records, one JSON line each; seg-<n>.acked holds the ids the
// control plane acknowledged. A closed segment whose records are all acknowledged is deleted.
// Every start opens a new active segment; older segments are only read, so nothing is ever
// appended after a torn line of a segment.
//
// A crash mid-write leaves at most the last, unsynced batch of a file damaged (never
// acknowledged to a caller): a torn line, or a region of zero bytes where the filesystem had
// extended the file but not yet written its data (delayed allocation, preallocation). Reading
// treats NUL bytes like line ends (JSON text never holds a raw NUL) and skips every piece that
// is not a whole record, so a complete record is kept even when zeros touch it. The files that
// are appended to across restarts (seg-<n>.acked, rejected.jsonl) have such a damaged tail cut
// back to their last complete line at open, so the next append never glues onto it. In a
// running process, a batch whose write or sync failed (disk full, I/O error) is refused to its
// callers and cut off the active segment before the next batch (or the next batch goes to a
// new segment), for the same reason.
// rejected.jsonl holds records set aside for good ({rejected_at, reason, record} per line):
// refused by the control plane, or of another installation. They are never shipped again and
// never deleted by the proxy; an operator reads them.
import { type FileHandle, mkdir, open, readdir, readFile, rm } from "node:fs/promises";
import { writeSync } from "node:fs";
import { join } from "node:path";
import type { AuditRecord } from "../../contract/audit.ts";
import { fsyncDir } from "../durable-file.ts";

export const DEFAULT_SEGMENT_MAX_BYTES = 4 * 1024 * 1024;
export const REJECTED_FILE = "rejected.jsonl";

export type SpoolOptions = {
  segmentMaxBytes?: number;
  /** Writes one batch's text to the active segment; tests inject failures (default: write it all). */
  writeBatch?: (fd: number, buf: Buffer) => void;
};

type Segment = { seq: number; unacked: Set<string>; closed: boolean };
type Pending = { record: AuditRecord; line: string; resolve: () => void; reject: (e: unknown) => void };

function writeFully(fd: number, buf: Buffer): void {
  for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off, buf.length - off);
}

const segName = (seq: number, ext: "jsonl" | "acked") => `seg-${String(seq).padStart(12, "0")}.${ext}`;

/** The pieces of a spool file between line ends and NUL bytes (zero-filled regions), empty ones dropped. */
export function spoolLines(text: string): string[] {
  return text.split(/[\n\0]+/).filter(Boolean);
}

/** A spooled record line, or null for a torn or foreign piece. */
function parseRecord(line: string): AuditRecord | null {
  try {
    const r = JSON.parse(line) as AuditRecord;
    return r !== null && typeof r === "object" && typeof r.id === "string" ? r : null;
  } catch {
    return null;
  }
}

/**
 * How many bytes of an append-only file end in a complete line: trailing zero bytes and a last
 * line with no line end (a torn write) are cut off. Pure.
 */
export function completeLength(buf: Uint8Array): number {
  let end = buf.length;
  while (end > 0 && buf[end - 1] === 0) end--;
  if (end > 0 && buf[end - 1] !== 0x0a) end = buf.lastIndexOf(0x0a, end - 1) + 1;
  return end;
}

/** Cut a damaged tail off an append-only file (see the top of this file); absent is fine. */
async function repairTail(path: string): Promise<void> {
  const buf = await ifPresent(readFile(path));
  if (buf === null) return;
  const end = completeLength(buf);
  if (end === buf.length) return;
  const fh = await open(path, "r+");
  try {
    await fh.truncate(end);
    await fh.datasync();
  } finally {
    await fh.close();
  }
}

/** A file read, or null when the file does not exist; any other failure is thrown. */
function ifPresent<T>(read: Promise<T>): Promise<T | null> {
  return read.catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return null;
    throw e;
  });
}
const readIfPresent = (path: string) => ifPresent(readFile(path, "utf8"));

export class AuditSpool {
  /** fdatasync calls made for appends (the group-commit test counts them). */
  appendSyncs = 0;
  private readonly queue = new Map<string, { record: AuditRecord; seq: number }>();
  private readonly segments = new Map<number, Segment>();
  private pending: Pending[] = [];
  private flushing: Promise<void> | null = null;
  /** Bytes of the active segment that hold whole, synced batches: its clean end. */
  private active!: { seq: number; fh: FileHandle; bytes: number };
  /** A batch failed: the active segment may end in part of it, past `active.bytes`. */
  private dirtyTail = false;
  private closed = false;

  private constructor(
    readonly dir: string,
    private readonly segmentMaxBytes: number,
    private readonly writeBatch: (fd: number, buf: Buffer) => void,
  ) {}

  static async open(dir: string, opts: SpoolOptions = {}): Promise<AuditSpool> {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const spool = new AuditSpool(dir, opts.segmentMaxBytes ?? DEFAULT_SEGMENT_MAX_BYTES, opts.writeBatch ?? writeFully);
    await spool.recover();
    return spool;
  }

  /** Records not yet acknowledged by the control plane. */
  get depth(): number {
    return this.queue.size + this.pending.length;
  }

  /** Durably append one record; resolves once it is on disk. */
  append(record: AuditRecord): Promise<void> {
    if (this.closed) return Promise.reject(new Error("audit spool is closed"));
    return new Promise((resolve, reject) => {
      this.pending.push({ record, line: `${JSON.stringify(record)}\n`, resolve, reject });
      this.flushing ??= this.flush();
    });
  }

  /** The oldest unacknowledged records, in append order. */
  unshipped(limit: number): AuditRecord[] {
    const out: AuditRecord[] = [];
    for (const { record } of this.queue.values()) {
      if (out.length >= limit) break;
      out.push(record);
    }
    return out;
  }

  /** The control plane holds these ids: drop them, and delete segments left with nothing. */
  async ack(ids: readonly string[]): Promise<void> {
    const bySeg = new Map<number, string[]>();
    for (const id of ids) {
      const e = this.queue.get(id);
      if (!e) continue;
      let list = bySeg.get(e.seq);
      if (!list) bySeg.set(e.seq, (list = []));
      list.push(id);
    }
    for (const [seq, list] of bySeg) {
      const fh = await open(join(this.dir, segName(seq, "acked")), "a", 0o600);
      try {
        await fh.appendFile(`${list.join("\n")}\n`);
        await fh.datasync();
      } finally {
        await fh.close();
      }
      const seg = this.segments.get(seq)!;
      for (const id of list) {
        this.queue.delete(id);
        seg.unacked.delete(id);
      }
      if (seg.closed && seg.unacked.size === 0) await this.dropSegment(seq);
    }
  }

  /**
   * Set records aside for good: append them durably to rejected.jsonl with the reason, then
   * acknowledge them so shipping continues. A crash in between sets them aside twice, harmlessly.
   */
  async reject(entries: readonly { record: AuditRecord; reason: string }[], at: Date = new Date()): Promise<void> {
    if (entries.length === 0) return;
    const fh = await open(join(this.dir, REJECTED_FILE), "a", 0o600);
    try {
      await fh.appendFile(entries.map((e) => `${JSON.stringify({ rejected_at: at.toISOString(), reason: e.reason, record: e.record })}\n`).join(""));
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
    while (this.flushing) await this.flushing;
    await this.active.fh.close();
  }

  private async flush(): Promise<void> {
    // Let every append of this tick join the first batch.
    await new Promise<void>((r) => setImmediate(r));
    try {
      while (this.pending.length > 0) {
        const batch = this.pending;
        this.pending = [];
        try {
          if (this.dirtyTail) await this.cleanTail();
          const text = batch.map((p) => p.line).join("");
          // A batch is a few KB into the page cache: written in place (microseconds), which
          // spares a thread-pool round trip per commit; only the fdatasync goes off-thread.
          this.writeBatch(this.active.fh.fd, Buffer.from(text));
          await this.active.fh.datasync();
          this.appendSyncs++;
          const seg = this.segments.get(this.active.seq)!;
          for (const p of batch) {
            this.queue.set(p.record.id, { record: p.record, seq: this.active.seq });
            seg.unacked.add(p.record.id);
          }
          this.active.bytes += Buffer.byteLength(text);
          for (const p of batch) p.resolve();
          if (this.active.bytes >= this.segmentMaxBytes) await this.rotate();
        } catch (e) {
          // A failed write (ENOSPC, EIO) or sync may leave part of the batch in the file; its
          // callers are refused, and the next batch must not follow that torn text.
          this.dirtyTail = true;
          for (const p of batch) p.reject(e);
        }
      }
    } finally {
      this.flushing = null;
    }
  }

  /**
   * Cut the active segment back to its last whole batch; when even that fails, continue in a
   * new segment. Either way the next record starts on a line of its own. Throws (the batch is
   * refused, and this is tried again) when neither works.
   */
  private async cleanTail(): Promise<void> {
    try {
      await this.active.fh.truncate(this.active.bytes);
      await this.active.fh.datasync();
    } catch {
      await this.rotate();
    }
    this.dirtyTail = false;
  }

  private async openActive(seq: number): Promise<void> {
    // "ax": a new file, never an existing one that might end in a torn line.
    let fh: FileHandle | null = null;
    while (!fh) {
      fh = await open(join(this.dir, segName(seq, "jsonl")), "ax", 0o600).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== "EEXIST") throw e;
        seq++;
        return null;
      });
    }
    fsyncDir(this.dir);
    this.active = { seq, fh, bytes: 0 };
    this.segments.set(seq, { seq, unacked: new Set(), closed: false });
  }

  private async rotate(): Promise<void> {
    const old = this.active;
    await this.openActive(old.seq + 1);
    await old.fh.close();
    const seg = this.segments.get(old.seq)!;
    seg.closed = true;
    if (seg.unacked.size === 0) await this.dropSegment(old.seq);
  }

  private async dropSegment(seq: number): Promise<void> {
    this.segments.delete(seq);
    await rm(join(this.dir, segName(seq, "jsonl")), { force: true });
    await rm(join(this.dir, segName(seq, "acked")), { force: true });
  }

  private async recover(): Promise<void> {
    const names = await readdir(this.dir);
    const seqs = new Set<number>();
    for (const n of names) {
      const m = /^seg-(\d{12})\.(jsonl|acked)$/.exec(n);
      if (m) seqs.add(Number(m[1]));
    }
    let maxSeq = 0;
    for (const seq of [...seqs].sort((a, b) => a - b)) {
      maxSeq = Math.max(maxSeq, seq);
      // Only a missing file is missing: an unreadable one stops the start rather than losing acks.
      const text = await readIfPresent(join(this.dir, segName(seq, "jsonl")));
      if (text === null) {
        await rm(join(this.dir, segName(seq, "acked")), { force: true }); // orphan ack file
        continue;
      }
      const ackedPath = join(this.dir, segName(seq, "acked"));
      const acked = new Set(spoolLines((await readIfPresent(ackedPath)) ?? ""));
      const seg: Segment = { seq, unacked: new Set(), closed: true };
      for (const line of spoolLines(text)) {
        const record = parseRecord(line); // null: the torn tail of a crashed write
        if (!record || acked.has(record.id) || this.queue.has(record.id)) continue;
        this.queue.set(record.id, { record, seq });
        seg.unacked.add(record.id);
      }
      this.segments.set(seq, seg);
      if (seg.unacked.size === 0) await this.dropSegment(seq);
      else await repairTail(ackedPath); // later acks of this segment append here
    }
    await repairTail(join(this.dir, REJECTED_FILE));
    await this.openActive(maxSeq + 1);
  }
}
