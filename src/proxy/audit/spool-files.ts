// The files of the audit spool (spool.ts has the format and the crash cases): their names, the
// per-segment index kept in memory, the streamed scan of a segment (spool-load.ts rebuilds the
// index with it at start), ranged reads of records, and the repair of damaged tails. Records
// are opaque here: a JSON line with an id.
import { type FileHandle, open, readFile } from "node:fs/promises";

export const segName = (seq: number, ext: "jsonl" | "acked") => `seg-${String(seq).padStart(12, "0")}.${ext}`;
export const SEGMENT_FILE = /^seg-(\d{12})\.(jsonl|acked)$/;
export const REJECTED_FILE = "rejected.jsonl";
/** The next segment, zero-filled and synced ahead of time (preallocate); not a segment until renamed. */
export const SPARE_FILE = "seg-spare.zeroed";

/** Bytes read at a time while scanning a segment at start: memory stays flat whatever its size. */
const SCAN_CHUNK = 1024 * 1024;

/** 32-bit FNV-1a of an id: lets an id that was not lent out be found without keeping the ids. */
export function idHash(id: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * Where the records of one segment lie, and which are acknowledged: 13 bytes per record
 * (offset, length, id hash, acknowledged flag) instead of the record itself, so a long
 * control-plane outage costs disk, not memory.
 */
export class SegmentIndex {
  closed = false;
  count = 0;
  unacked = 0;
  /** Records before this one are all acknowledged: where the search for unshipped ones starts. */
  head = 0;
  offsets = new Uint32Array(64);
  lengths = new Uint32Array(64);
  hashes = new Uint32Array(64);
  acked = new Uint8Array(64);

  constructor(readonly seq: number) {}

  add(offset: number, length: number, id: string): void {
    if (this.count === this.offsets.length) this.grow();
    const i = this.count++;
    this.offsets[i] = offset;
    this.lengths[i] = length;
    this.hashes[i] = idHash(id);
    this.unacked++;
  }

  /** Mark one record acknowledged; false when it already was. */
  ack(i: number): boolean {
    if (this.acked[i]) return false;
    this.acked[i] = 1;
    this.unacked--;
    while (this.head < this.count && this.acked[this.head]) this.head++;
    return true;
  }

  /** The unacknowledged records whose id hashes to `hash`. */
  *candidates(hash: number): Generator<number> {
    for (let i = this.head; i < this.count; i++) if (this.hashes[i] === hash && !this.acked[i]) yield i;
  }

  /** A closed segment takes no more records: give back the arrays' spare room (up to half). */
  trim(): void {
    if (this.count === this.offsets.length) return;
    this.resize(Math.max(this.count, 1));
  }

  private grow(): void {
    this.resize(this.offsets.length * 2);
  }

  private resize(n: number): void {
    const widen = <T extends Uint32Array | Uint8Array>(a: T, make: (n: number) => T): T => {
      const b = make(n);
      b.set(a.subarray(0, Math.min(a.length, n)) as T);
      return b;
    };
    this.offsets = widen(this.offsets, (k) => new Uint32Array(k));
    this.lengths = widen(this.lengths, (k) => new Uint32Array(k));
    this.hashes = widen(this.hashes, (k) => new Uint32Array(k));
    this.acked = widen(this.acked, (k) => new Uint8Array(k));
  }
}

const ID_PREFIX = Buffer.from('{"id":"');
const [QUOTE, BACKSLASH, OPEN_OBJ, OPEN_ARR, CLOSE_OBJ, CLOSE_ARR] = [0x22, 0x5c, 0x7b, 0x5b, 0x7d, 0x5d];

/**
 * The id of a whole record line, or null for a torn piece, without parsing it into objects (the
 * start reads a backlog of millions). A line this proxy wrote starts with `{"id":"`; it is whole
 * when its brackets, outside strings, close for the first time at its last byte: a piece cut off
 * a line's end (a torn write) never closes, one cut off its start closes too early or never
 * opens with the id. Any other line is parsed (recordId).
 */
export function lineRecordId(bytes: Buffer): string | null {
  if (bytes.length < ID_PREFIX.length + 2 || !bytes.subarray(0, ID_PREFIX.length).equals(ID_PREFIX)) return recordId(bytes.toString("utf8"));
  let depth = 0;
  let inString = false;
  const last = bytes.length - 1;
  for (let i = 0; i <= last; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
    } else if (c === QUOTE) inString = true;
    else if (c === OPEN_OBJ || c === OPEN_ARR) depth++;
    else if ((c === CLOSE_OBJ || c === CLOSE_ARR) && --depth === 0 && i !== last) return null;
  }
  if (depth !== 0 || inString) return null;
  const end = bytes.indexOf(QUOTE, ID_PREFIX.length);
  const id = bytes.toString("latin1", ID_PREFIX.length, end);
  return /^[\x21-\x7e]+$/.test(id) && !id.includes("\\") ? id : recordId(bytes.toString("utf8"));
}

/** A spooled line's record id, or null for a torn or foreign piece. */
export function recordId(line: string): string | null {
  try {
    const r = JSON.parse(line) as { id?: unknown } | null;
    return r !== null && typeof r === "object" && typeof r.id === "string" ? r.id : null;
  } catch {
    return null;
  }
}

/** The pieces of a spool file between line ends and NUL bytes (zero-filled regions), empty ones dropped. */
export function spoolLines(text: string): string[] {
  return text.split(/[\n\0]+/).filter(Boolean);
}

/**
 * Call `piece` with every non-empty piece of a file between line ends and NUL bytes, with its
 * byte offset, reading the file a chunk at a time. A piece longer than a chunk is carried over.
 */
export async function scanPieces(fh: FileHandle, piece: (offset: number, bytes: Buffer) => void): Promise<void> {
  // One buffer for the whole file (a chunk plus the unfinished line before it): the scan of a
  // large backlog leaves no garbage behind but the ids it keeps.
  let buf = Buffer.allocUnsafe(SCAN_CHUNK * 2);
  let len = 0; // bytes of buf holding file data
  let base = 0; // file offset of buf[0]
  for (;;) {
    if (len === buf.length) {
      const bigger = Buffer.allocUnsafe(buf.length * 2); // a line longer than the buffer
      buf.copy(bigger, 0, 0, len);
      buf = bigger;
    }
    const { bytesRead } = await fh.read(buf, len, Math.min(SCAN_CHUNK, buf.length - len), base + len);
    if (bytesRead === 0) break;
    len += bytesRead;
    let start = 0;
    for (let nl = buf.indexOf(0x0a, start); nl !== -1 && nl < len; nl = buf.indexOf(0x0a, start)) {
      splitNul(buf, start, nl, base, piece);
      start = nl + 1;
    }
    // A NUL ends a piece as a line end does: what lies before the last one is split now, so a
    // long zero run (a preallocated segment's tail after a crash) is never carried over.
    const z = start < len ? buf.lastIndexOf(0, len - 1) : -1;
    if (z >= start) {
      splitNul(buf, start, z, base, piece);
      start = z + 1;
    }
    // The unfinished line moves to the front and waits for the next chunk.
    buf.copyWithin(0, start, len);
    len -= start;
    base += start;
  }
  splitNul(buf, 0, len, base, piece);
}

function splitNul(data: Buffer, from: number, to: number, base: number, piece: (offset: number, bytes: Buffer) => void): void {
  let a = from;
  while (a < to) {
    let z = data.indexOf(0, a);
    if (z === -1 || z > to) z = to;
    if (z > a) piece(base + a, data.subarray(a, z));
    a = z + 1;
    // A run of zeros (a preallocated segment's tail after a crash) is skipped byte by byte
    // here, not one indexOf call per byte.
    while (a < to && data[a] === 0) a++;
  }
}

/** One read of `length` bytes at `offset` (a run of consecutive records). */
export async function readRange(fh: FileHandle, offset: number, length: number): Promise<Buffer> {
  const buf = Buffer.allocUnsafe(length);
  let got = 0;
  while (got < length) {
    const { bytesRead } = await fh.read(buf, got, length - got, offset + got);
    if (bytesRead === 0) throw new Error(`audit spool segment ends before byte ${offset + length}`);
    got += bytesRead;
  }
  return buf;
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

/** Cut a damaged tail off an append-only file (spool.ts); absent is fine. Truncating needs no space. */
export async function repairTail(path: string): Promise<void> {
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
export async function ifPresent<T>(read: Promise<T>): Promise<T | null> {
  return read.catch((e: NodeJS.ErrnoException) => {
    if (e.code === "ENOENT") return null;
    throw e;
  });
}
export const readIfPresent = async (path: string) => ifPresent(readFile(path, "utf8"));
