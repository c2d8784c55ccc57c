// Preallocated segments (the daemon's spool): records go into segments zero-filled and synced
// ahead of time, so an fdatasync flushes data without growing the file. What must hold: no
// record lost or misplaced, a crash's zero tail skipped, a clean close leaving no zeros.
import { describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readFileSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import type { AuditRecord } from "../../contract/audit.ts";
import { fakeRecord } from "../testing/records.ts";
import { type AuditSpool, SPARE_FILE } from "./spool.ts";
import { spoolFixtures } from "./spool-test-fixtures.ts";

const SEGMENT = 64 * 1024;
const { tmp, openSpool } = spoolFixtures("svc-prealloc-", { preallocate: true, segmentMaxBytes: SEGMENT });

const segments = (dir: string) =>
  readdirSync(dir)
    .filter((n) => n.endsWith(".jsonl"))
    .sort();
/** The newest segment, once it is a zero-filled spare (the run's first segment is a plain file). */
async function untilPreallocated(dir: string, s: AuditSpool, written: AuditRecord[]): Promise<string> {
  for (let i = 0; i < 2000; i++) {
    const newest = segments(dir).at(-1)!;
    if (statSync(join(dir, newest)).size === SEGMENT) return newest;
    const r = fakeRecord();
    await s.append(r);
    written.push(r);
    await Bun.sleep(1);
  }
  throw new Error("the spool never moved to a preallocated segment");
}

describe("AuditSpool with preallocate", () => {
  test("records land in the zero-filled segment in order; a clean close cuts the zeros; reopen reads them all", async () => {
    const dir = tmp();
    const s = await openSpool(dir);
    const written: AuditRecord[] = [];
    const seg = await untilPreallocated(dir, s, written);
    for (let i = 0; i < 20; i++) {
      const batch = [fakeRecord(), fakeRecord(), fakeRecord()];
      await Promise.all(batch.map(async (r) => s.append(r)));
      written.push(...batch);
    }
    expect(statSync(join(dir, seg)).size).toBe(SEGMENT); // written within the preallocated size
    expect(await s.unshipped(1000)).toEqual(written);
    await s.close();
    const text = readFileSync(join(dir, seg), "utf8");
    expect(text.includes("\0")).toBe(false);
    expect(text.endsWith("\n")).toBe(true);
    expect(existsSync(join(dir, SPARE_FILE))).toBe(false);
    const again = await openSpool(dir, { preallocate: false });
    expect(await again.unshipped(1000)).toEqual(written);
  });

  test("a crash leaves the zero tail: the next start reads every record and nothing else", async () => {
    const dir = tmp();
    const s = await openSpool(dir);
    const written: AuditRecord[] = [];
    const seg = await untilPreallocated(dir, s, written);
    for (let i = 0; i < 5; i++) {
      const r = fakeRecord();
      await s.append(r);
      written.push(r);
    }
    // no close (kill -9): the segment still ends in zeros
    expect(readFileSync(join(dir, seg)).at(-1)).toBe(0);
    const again = await openSpool(dir, { preallocate: false });
    expect(await again.unshipped(1000)).toEqual(written);
  });

  test("rotation at the size limit continues into the next spare, records in order across segments", async () => {
    const dir = tmp();
    const s = await openSpool(dir);
    const written: AuditRecord[] = [];
    await untilPreallocated(dir, s, written);
    // ~1 KB records: several segments of 64 KiB
    for (let i = 0; i < 200; i++) {
      const r = fakeRecord({ reason: "x".repeat(600) });
      await s.append(r);
      written.push(r);
    }
    expect(segments(dir).length).toBeGreaterThan(3);
    expect(await s.unshipped(10_000)).toEqual(written);
  });

  test("a batch that fails halfway in a preallocated segment: the next batch starts where the failed one did", async () => {
    const dir = tmp();
    let failNext = false;
    const writeBatch = (fd: number, buf: Buffer, position: number) => {
      if (failNext) {
        failNext = false;
        writeSync(fd, buf, 0, Math.floor(buf.length / 2), position);
        throw Object.assign(new Error("EIO: i/o error, write"), { code: "EIO" });
      }
      writeSync(fd, buf, 0, buf.length, position);
    };
    const s = await openSpool(dir, { writeBatch });
    const written: AuditRecord[] = [];
    await untilPreallocated(dir, s, written);
    failNext = true;
    await expect(s.append(fakeRecord())).rejects.toThrow(/EIO/);
    const after = fakeRecord();
    await s.append(after);
    written.push(after);
    expect(await s.unshipped(1000)).toEqual(written);
    const again = await openSpool(dir, { preallocate: false });
    expect(await again.unshipped(1000)).toEqual(written);
  });
});
