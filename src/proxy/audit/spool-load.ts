// The audit spool's start (spool.ts has the file format and the crash cases). Before appends
// are taken: the directory's segments are listed, rejected.jsonl's damaged tail is cut and a
// previous run's spare removed (listOlder). Then, while appends may already run (the daemon's
// loadInBackground), the older segments' index is rebuilt one segment at a time, each streamed
// a chunk at a time (flat memory), into the backlog (loadOlder): a fully acknowledged segment
// is deleted, the .acked file of any other has its damaged tail cut, since later
// acknowledgements append to it.
import { open, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { SpoolBacklog } from "./spool-backlog.ts";
import { ifPresent, lineRecordId, readIfPresent, REJECTED_FILE, repairTail, scanPieces, SEGMENT_FILE, SegmentIndex, segName, SPARE_FILE, spoolLines } from "./spool-files.ts";

/**
 * At open, before the new active segment: cut rejected.jsonl's damaged tail and remove a
 * leftover spare; returns the segments already there, oldest first, for loadOlder().
 */
export async function listOlder(dir: string): Promise<number[]> {
  const seqs = new Set<number>();
  for (const n of await readdir(dir)) {
    const m = SEGMENT_FILE.exec(n);
    if (m) seqs.add(Number(m[1]));
  }
  await repairTail(join(dir, REJECTED_FILE));
  await rm(join(dir, SPARE_FILE), { force: true }); // a previous run's, maybe half written
  return [...seqs].sort((a, b) => a - b);
}

/**
 * Rebuild the index of the older segments into `backlog`, streaming each one (flat memory);
 * stops before the next segment once `stopped()` (the spool is closing). While a segment is
 * scanned it is the backlog's `scanning` one, so its records count as they are read.
 */
export async function loadOlder(backlog: SpoolBacklog, seqs: readonly number[], stopped: () => boolean): Promise<void> {
  for (const seq of seqs) {
    if (stopped()) return;
    let seg: SegmentIndex | null;
    try {
      seg = await indexSegment(backlog.dir, seq, (s) => (backlog.scanning = s));
    } catch (e) {
      backlog.scanning = null;
      throw e;
    }
    if (!seg) continue;
    backlog.indexed(seg); // counted as the backlog's from here on, in the same step
    if (seg.unacked === 0) await backlog.drop(seq);
    else await repairTail(join(backlog.dir, segName(seq, "acked"))); // later acks of this segment append here
  }
  backlog.sort();
}

/**
 * Index one closed segment of an earlier run from its files, streaming it (flat memory): its
 * whole record lines, those its .acked file names marked acknowledged. `scanning` gets the
 * index before the scan starts, so its count can be read while it grows. Null when the
 * segment file is gone (an orphan .acked file is removed); any other failure is thrown, so an
 * unreadable file stops the load rather than losing acknowledgements.
 */
async function indexSegment(dir: string, seq: number, scanning: (seg: SegmentIndex) => void): Promise<SegmentIndex | null> {
  const ackedPath = join(dir, segName(seq, "acked"));
  const fh = await ifPresent(open(join(dir, segName(seq, "jsonl")), "r"));
  if (!fh) {
    await rm(ackedPath, { force: true });
    return null;
  }
  const seg = new SegmentIndex(seq);
  seg.closed = true;
  try {
    const acked = new Set(spoolLines((await readIfPresent(ackedPath)) ?? ""));
    scanning(seg);
    await scanPieces(fh, (offset, bytes) => {
      const id = lineRecordId(bytes); // null: the torn tail of a crashed write
      if (id === null) return;
      seg.add(offset, bytes.length, id);
      if (acked.has(id)) seg.ack(seg.count - 1);
    });
  } finally {
    await fh.close();
  }
  seg.trim();
  return seg;
}
