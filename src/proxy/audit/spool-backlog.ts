// The records of the audit spool that the control plane has not acknowledged yet (spool.ts has
// the file format, the crash cases and the full-disk path): the segments' indexes in append
// order, the oldest records read back for the shipper with their exact lines, their
// acknowledgement (seg-<n>.acked, written as a hint only; a closed segment left with nothing is
// deleted), and records set aside for good in rejected.jsonl. Only the index is in memory
// (spool-files.ts SegmentIndex): the records are read back from the segment files.
import { open, rm } from "node:fs/promises";
import { join } from "node:path";
import type { AuditRecord } from "../../contract/audit.ts";
import { fsyncDir } from "../durable-file.ts";
import { type CommittedRecord } from "./spool-commit.ts";
import { idHash, readRange, recordId, REJECTED_FILE, SegmentIndex, segName } from "./spool-files.ts";

/** A shipping batch read back is cut at this many bytes (at least one record). */
export const MAX_READ_BYTES = 4 * 1024 * 1024;
/** Records handed out by unshippedLines() remembered for ack(): a few batches' worth. */
const MAX_LENT = 50_000;

/**
 * A record read back from the spool: parsed (the shipper checks its owner, rejected.jsonl
 * names it) and its line exactly as spooled, which is the record's JSON: the shipper sends
 * that text as is instead of serializing the record again.
 */
export type SpooledRecord = { record: AuditRecord; line: string };

/** A spooled record set aside for good (rejected.jsonl), with the reason. */
export type SetAside = SpooledRecord & { reason: string };

type Location = { seg: SegmentIndex; i: number };

function parseRecord(line: string): AuditRecord | null {
  try {
    const r = JSON.parse(line) as AuditRecord | null;
    return r !== null && typeof r === "object" && typeof r.id === "string" ? r : null;
  } catch {
    return null;
  }
}

export class SpoolBacklog {
  /** Acknowledgements kept in memory only, because writing seg-<n>.acked failed (full disk). */
  acksNotWritten = 0;
  /** Records on disk not yet acknowledged, in the indexed segments. */
  unacked = 0;
  /** The older segment the start is scanning now (spool-load.ts): its records count in the spool's depth as they are read. */
  scanning: SegmentIndex | null = null;
  private readonly segments = new Map<number, SegmentIndex>();
  /** Records unshippedLines() handed out, by id, until acknowledged: the shipper acks only these. */
  private readonly lent = new Map<string, Location>();
  /** Segments whose .acked file may end in a torn append of this process. */
  private readonly ackTorn = new Set<number>();

  constructor(
    readonly dir: string,
    /** A segment was deleted: space may have returned. */
    private readonly dropped: () => void,
  ) {}

  /** A new, empty active segment. */
  opened(seq: number): void {
    this.segments.set(seq, new SegmentIndex(seq));
  }

  /** A batch of the active segment `seq` is durable (spool-commit.ts). */
  committed(seq: number, records: CommittedRecord[]): void {
    const seg = this.segments.get(seq)!;
    for (const r of records) seg.add(r.offset, r.length, r.id);
    this.unacked += records.length;
  }

  /** An older segment indexed at start; it stops being `scanning` in the same step, so it is counted once. */
  indexed(seg: SegmentIndex): void {
    this.segments.set(seg.seq, seg);
    this.scanning = null;
    this.unacked += seg.unacked;
  }

  /** The active segment was opened before the older ones were indexed: put every segment back in append order. */
  sort(): void {
    const all = [...this.segments.values()].sort((a, b) => a.seq - b.seq);
    this.segments.clear();
    for (const seg of all) this.segments.set(seg.seq, seg);
  }

  /** Segment `seq` takes no more records (a rotation): deleted at once when nothing in it is left to ship. */
  async close(seq: number): Promise<void> {
    const seg = this.segments.get(seq)!;
    seg.closed = true;
    seg.trim();
    if (seg.unacked === 0) await this.drop(seq);
  }

  /**
   * The oldest unacknowledged records, in append order, read back from their segments with
   * their exact lines: at most `limit`, and no more than MAX_READ_BYTES (but at least one).
   */
  async unshippedLines(limit: number): Promise<SpooledRecord[]> {
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
      if (seg.closed && seg.unacked === 0 && this.segments.has(seg.seq)) await this.drop(seg.seq);
    }
  }

  /**
   * Set records aside for good: append them durably to rejected.jsonl with the reason, then
   * acknowledge them so shipping continues. A crash in between sets them aside twice, harmlessly.
   * A record is kept as its spooled `line`, the exact bytes read back (unshippedLines).
   * This needs space; on a full disk it throws and the records stay spooled.
   */
  async reject(entries: readonly SetAside[], at: Date): Promise<void> {
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

  /** Delete segment `seq`'s files (nothing in it is left to ship). */
  async drop(seq: number): Promise<void> {
    this.segments.delete(seq);
    await rm(join(this.dir, segName(seq, "jsonl")), { force: true });
    await rm(join(this.dir, segName(seq, "acked")), { force: true });
    this.dropped();
  }

  /** An id that unshippedLines() did not hand out: found by its hash in the index, checked on disk. */
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

  /** Best effort (see the top of spool.ts): a failed write keeps the acknowledgement in memory only. */
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
}
