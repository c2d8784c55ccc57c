// The spool's memory does not grow with its backlog: a fresh process opens a spool of 60,000
// unshipped records (about 120 MB on disk) and its resident memory grows by about 25 MB of
// allocator slack, where keeping the records (the old spool) took 180 MB. Sizes only, no timing. The full
// scale (1,000,000 records, RSS ≤ 150 MB) is `bun bench/run.ts spool`.
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fakeRecord } from "../testing/records.ts";
import { segName } from "./spool-files.ts";

const RECORDS = 60_000;
const PER_SEGMENT = 2_000;
/**
 * Growth allowed: the index (13 bytes a record) plus what the allocator keeps of the scan's
 * garbage (about 25 MB measured). Keeping the records took 180 MB for these 60,000.
 */
const MAX_GROWTH_BYTES = 64 * 1024 * 1024;

const dir = mkdtempSync(join(tmpdir(), "svc-spool-mem-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("opening 60,000 unshipped records grows RSS by allocator slack, not by the records; they all ship", async () => {
  const ciphertext = Buffer.alloc(1500, 7).toString("base64"); // an encrypted call: ~2 KB a line
  for (let seq = 1; seq * PER_SEGMENT <= RECORDS; seq++) {
    const lines = Array.from({ length: PER_SEGMENT }, () => `${JSON.stringify(fakeRecord({ ciphertext, recipient_key_ids: ["key_1"] }))}\n`);
    await Bun.write(join(dir, segName(seq, "jsonl")), lines.join(""));
  }
  const script = join(dir, "open.ts");
  await Bun.write(
    script,
    `import { AuditSpool } from ${JSON.stringify(join(import.meta.dir, "spool.ts"))};
     const rss = () => { Bun.gc(true); return process.memoryUsage().rss; };
     const before = rss();
     const s = await AuditSpool.open(${JSON.stringify(join(dir, "spool"))});
     const opened = rss();
     let shipped = 0;
     for (;;) { const b = await s.unshipped(500); if (b.length === 0) break; await s.ack(b.map((r) => r.id)); shipped += b.length; }
     const after = rss();
     console.log(JSON.stringify({ before, opened, after, shipped, depth: s.depth }));
     await s.close();`,
  );
  // The records are in <dir>/spool, so the script beside them is not read as a segment.
  await Bun.$`mkdir -p ${join(dir, "spool")} && mv ${dir}/seg-* ${join(dir, "spool")}/`.quiet();
  const out = await Bun.$`bun ${script}`.text();
  const m = JSON.parse(out.trim().split("\n").at(-1)!) as { before: number; opened: number; after: number; shipped: number; depth: number };
  expect(m.shipped).toBe(RECORDS);
  expect(m.depth).toBe(0);
  expect(m.opened - m.before).toBeLessThan(MAX_GROWTH_BYTES);
  expect(m.after - m.before).toBeLessThan(MAX_GROWTH_BYTES);
}, 120_000);
