// What `svc audit verify` saw of each record, kept on the verifier's machine: for each store
// chain of a control plane and organization, the first 8 bytes of every record's link hash,
// by number (~/.config/svc/audit-seen/<org>-<url digest>/<chain>.bin, 8 bytes a record, mode
// 0600). A checkpoint signs only a chain's head: someone who changes a record and re-links the
// chain above it up to a new head, with a checkpoint re-signed by another key, is caught by the
// pinned key, but the record named would be the head. With this memory, a record changed after
// a run saw it is named itself, whatever was re-linked. Reads go in number order, as the export
// in chain order comes (constant memory); new records are appended only after a run that found
// nothing wrong. 8 bytes of SHA-256: matching one by chance takes ~2^64 tries.
import { appendFileSync, closeSync, existsSync, openSync, readFileSync, readSync, renameSync, rmSync, statSync, writeFileSync, writeSync } from "node:fs";
import { join } from "node:path";
import { trustFileName } from "./pins.ts";
import { CONFIG_FILE_MODE, configDir, ensurePrivateDir } from "../shared/config.ts";

const WIDTH = 8;
const BLOCK = 64 * 1024;
/**
 * The most numbers one record may skip past the last one remembered (a retention gap before
 * this verifier first ran): a number far beyond the chain's length, written into the store,
 * would otherwise fill the disk with unknown entries. Such a record is not remembered; the
 * check itself names it (a number no checkpoint signed).
 */
export const MAX_SKIP = 50_000_000;
const ZERO = Buffer.alloc(WIDTH);
/** The record being recalled (push copies it). */
const MINE = Buffer.alloc(WIDTH);

/** One chain's file being read, and what this run saw beyond it (flushed to `<file>.new` a block at a time). */
type Chain = { fd: number | null; count: number; block: Buffer; blockStart: number; blockLen: number; fresh: Buffer; freshLen: number; next: number; pending: number };

/** Appends `from` to `to` a block at a time: memory stays one block whatever the run saw. */
function appendInBlocks(from: string, to: string): void {
  const src = openSync(from, "r");
  const dst = openSync(to, "a", CONFIG_FILE_MODE);
  try {
    const block = Buffer.alloc(BLOCK);
    for (let n = readSync(src, block, 0, BLOCK, null); n > 0; n = readSync(src, block, 0, BLOCK, null)) writeSync(dst, block, 0, n);
  } finally {
    closeSync(src);
    closeSync(dst);
  }
}

export class AuditMemory {
  private readonly chains = new Map<string, Chain>();
  private readonly seenAt: string;

  constructor(private readonly dir: string) {
    const index = join(dir, "index.json");
    const last = existsSync(index) ? (JSON.parse(readFileSync(index, "utf8")) as { at?: string }).at : undefined;
    this.seenAt = last ? `a run up to ${last}` : "an earlier run";
  }

  static at(home: string, url: string, orgId: string): AuditMemory {
    return new AuditMemory(join(configDir(home), "audit-seen", trustFileName(url, orgId)));
  }

  private chain(name: string): Chain {
    let c = this.chains.get(name);
    if (!c) {
      const file = this.file(name);
      const count = existsSync(file) ? Math.floor(statSync(file).size / WIDTH) : 0;
      // what an interrupted run left is not to be trusted or appended to
      rmSync(`${file}.new`, { force: true });
      c = { fd: count > 0 ? openSync(file, "r") : null, count, block: Buffer.alloc(BLOCK), blockStart: 0, blockLen: 0, fresh: Buffer.alloc(BLOCK), freshLen: 0, next: count + 1, pending: 0 };
      this.chains.set(name, c);
    }
    return c;
  }

  private file(chain: string): string {
    return join(this.dir, `${chain.replace(/[^A-Za-z0-9_-]/g, "_")}.bin`);
  }

  private saved(c: Chain, seq: number): Buffer {
    const at = (seq - 1) * WIDTH;
    if (at < c.blockStart || at + WIDTH > c.blockStart + c.blockLen) {
      c.blockStart = at;
      c.blockLen = readSync(c.fd!, c.block, 0, BLOCK, at);
    }
    return c.block.subarray(at - c.blockStart, at - c.blockStart + WIDTH);
  }

  /** Compares a record with what was seen at its place; remembers it when new. Null: same, or never seen. */
  recall(chainName: string, seq: number, hash: string): { seenAt: string } | null {
    const c = this.chain(chainName);
    // written into one scratch buffer: a Buffer made per record was a twentieth of a verification's CPU
    const mine = MINE.fill(0);
    mine.write(hash, 0, WIDTH, "hex");
    if (seq <= c.count) {
      const was = this.saved(c, seq);
      return was.equals(ZERO) || was.equals(mine) ? null : { seenAt: this.seenAt };
    }
    // New: kept in order; numbers skipped (a retention gap, an out-of-order file) are left unknown.
    if (seq < c.next || seq - c.next > MAX_SKIP) return null;
    for (; c.next <= seq; c.next++) this.push(chainName, c, c.next === seq ? mine : ZERO);
    return null;
  }

  private push(name: string, c: Chain, entry: Buffer): void {
    if (c.freshLen + WIDTH > BLOCK) this.flush(name, c);
    entry.copy(c.fresh, c.freshLen);
    c.freshLen += WIDTH;
  }

  private flush(name: string, c: Chain): void {
    if (c.freshLen === 0) return;
    ensurePrivateDir(join(this.dir, ".."));
    ensurePrivateDir(this.dir);
    appendFileSync(`${this.file(name)}.new`, c.fresh.subarray(0, c.freshLen), { mode: CONFIG_FILE_MODE });
    c.pending += c.freshLen;
    c.freshLen = 0;
  }

  /** After a run that found nothing wrong: the new records are remembered. */
  commit(at: string): void {
    for (const [name, c] of this.chains) {
      this.flush(name, c);
      if (c.pending === 0) continue;
      const file = this.file(name);
      if (c.count === 0) renameSync(`${file}.new`, file);
      else {
        appendInBlocks(`${file}.new`, file);
        rmSync(`${file}.new`);
      }
    }
    if (this.chains.size > 0) writeFileSync(join(this.dir, "index.json"), `${JSON.stringify({ at })}\n`, { mode: CONFIG_FILE_MODE });
    this.close();
  }

  /** After a run that found something wrong: nothing of it is remembered. */
  discard(): void {
    for (const name of this.chains.keys()) rmSync(`${this.file(name)}.new`, { force: true });
    this.close();
  }

  close(): void {
    for (const c of this.chains.values()) if (c.fd !== null) closeSync(c.fd);
    this.chains.clear();
  }
}
