// The spare segment of a preallocating spool (spool.ts `preallocate`, the daemon's; spool.ts has
// the file format): the next segment prepared in the background as SPARE_FILE, zero-filled to
// the segment size and fdatasync'ed, then hard-linked in as the next segment and written from
// its start, so a batch's fdatasync flushes data blocks only. The spare is never a segment (its
// name does not match SEGMENT_FILE); a start deletes a leftover one (spool-load.ts).
import { type FileHandle, link, open, rm } from "node:fs/promises";
import { join } from "node:path";
import { segName, SPARE_FILE } from "./spool-files.ts";

const ZERO_CHUNK = 1024 * 1024;

export class SpareSegment {
  /** SPARE_FILE is zero-filled and synced: the next segment can be taken from it. */
  ready = false;
  /** Its preparation, while it runs. */
  private work: Promise<void> | null = null;

  constructor(
    private readonly dir: string,
    private readonly size: number,
    /** The spool is closing: a preparation stops and leaves no spare ready. */
    private readonly stopped: () => boolean,
  ) {}

  /** Zero-fill and sync the spare in the background, unless it is ready or under way. */
  prepare(): void {
    if (this.ready || this.work || this.stopped()) return;
    const path = join(this.dir, SPARE_FILE);
    this.work = (async () => {
      try {
        const fh = await open(path, "w", 0o600);
        try {
          const zeros = Buffer.alloc(Math.min(ZERO_CHUNK, this.size));
          for (let at = 0; at < this.size && !this.stopped(); at += zeros.length) await fh.write(zeros, 0, Math.min(zeros.length, this.size - at), at);
          await fh.datasync();
        } finally {
          await fh.close();
        }
        this.ready = !this.stopped();
      } catch {
        // No room for it (or another failure): the next segment is a plain file; tried again at the next rotation.
        await rm(path, { force: true }).catch(() => {});
      } finally {
        this.work = null;
      }
    })();
  }

  /** The spare as segment `seq` (a hard link, never over an existing file), or null when taken or gone. */
  async take(seq: number): Promise<FileHandle | null> {
    this.ready = false;
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

  /** The spool is closing: wait for a preparation under way, then remove the spare. */
  async close(): Promise<void> {
    await this.work;
    await rm(join(this.dir, SPARE_FILE), { force: true });
  }
}
