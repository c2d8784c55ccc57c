import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { AuditRecord } from "../../contract/audit.ts";
import { AuditSpool, REJECTED_FILE } from "./spool.ts";
import { spoolFixtures } from "./spool-test-fixtures.ts";
import { fakeRecord } from "../testing/records.ts";

const { tmp, openSpool } = spoolFixtures("svc-spool-");

// What a start finds on disk (spool-load.ts): the backlog of earlier runs indexed (in the
// background for the daemon), and the files a crash leaves behind.
describe("AuditSpool at start", () => {
  test("loadInBackground: appends are taken before the backlog is indexed; shipping sees the backlog first, in order", async () => {
    const dir = tmp();
    const backlog = Array.from({ length: 3000 }, () => fakeRecord());
    writeFileSync(
      join(dir, "seg-000000000001.jsonl"),
      backlog
        .slice(0, 1500)
        .map((r) => `${JSON.stringify(r)}\n`)
        .join(""),
    );
    writeFileSync(
      join(dir, "seg-000000000002.jsonl"),
      backlog
        .slice(1500)
        .map((r) => `${JSON.stringify(r)}\n`)
        .join(""),
    );
    const s = await openSpool(dir, { loadInBackground: true });
    expect(s.depth).toBe(0); // open() returned before the backlog was read
    expect(s.indexing).toBe(true); // and says that 0 is not the backlog
    const fresh = fakeRecord();
    await s.append(fresh); // durable whatever the load's progress
    await s.loaded;
    expect(s.indexing).toBe(false);
    expect(s.depth).toBe(3001);
    const ids = (await s.unshipped(1e9)).map((r) => r.id);
    expect(ids).toEqual([...backlog, fresh].map((r) => r.id));
  });

  test("loadInBackground: while indexing, depth counts the records indexed so far (a segment's too, as it is read): it only grows, never past the backlog", async () => {
    const dir = tmp();
    const backlog = Array.from({ length: 6000 }, () => fakeRecord()); // ~4 MB: read in 1 MiB chunks
    writeFileSync(
      join(dir, "seg-000000000001.jsonl"),
      backlog
        .slice(0, 1000)
        .map((r) => `${JSON.stringify(r)}\n`)
        .join(""),
    );
    writeFileSync(
      join(dir, "seg-000000000002.jsonl"),
      backlog
        .slice(1000)
        .map((r) => `${JSON.stringify(r)}\n`)
        .join(""),
    );
    const s = await openSpool(dir, { loadInBackground: true });
    const seen: number[] = [];
    while (s.indexing) {
      seen.push(s.depth);
      await new Promise((r) => setImmediate(r));
    }
    // (how far each look got depends on the scheduler; counted twice or dropped between a segment's scan and its index would show)
    expect(seen.every((d, i) => d <= backlog.length && (i === 0 || d >= seen[i - 1]!))).toBe(true);
    expect(s.depth).toBe(backlog.length);
  });

  test("loadInBackground: close() while the backlog loads returns, and a later open reads everything", async () => {
    const dir = tmp();
    const backlog = Array.from({ length: 40 }, () => Array.from({ length: 50 }, () => fakeRecord()));
    backlog.forEach((seg, k) => writeFileSync(join(dir, `seg-${String(k + 1).padStart(12, "0")}.jsonl`), seg.map((r) => `${JSON.stringify(r)}\n`).join("")));
    const s = await AuditSpool.open(dir, { loadInBackground: true });
    await s.close();
    const again = await openSpool(dir);
    expect(again.depth).toBe(2000);
  });

  test("a record larger than the start's read buffer (5 MiB of ciphertext) is read back whole", async () => {
    const dir = tmp();
    const big = fakeRecord({ ciphertext: Buffer.alloc(4 * 1024 * 1024, 1).toString("base64"), recipient_key_ids: ["key_1"] });
    const recs = [fakeRecord(), big, fakeRecord()];
    writeFileSync(join(dir, "seg-000000000001.jsonl"), recs.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const s = await openSpool(dir);
    expect(s.depth).toBe(3);
    const back: AuditRecord[] = [];
    for (let batch = await s.unshipped(10); batch.length > 0; batch = await s.unshipped(10)) {
      back.push(...batch); // a batch read back stops at 4 MiB: the big record comes alone
      await s.ack(batch.map((r) => r.id));
    }
    expect(back.map((r) => r.id)).toEqual(recs.map((r) => r.id));
    expect(back[1]).toEqual(big);
  });

  // Files a crash leaves behind, written by hand: a segment ending in a torn line or in a
  // region of zero bytes (the filesystem extended the file but had not written the data yet).
  describe("crash-damaged files written by hand", () => {
    const SEG1 = "seg-000000000001.jsonl";
    const ACK1 = "seg-000000000001.acked";
    const line = (r: AuditRecord) => `${JSON.stringify(r)}\n`;
    const zeros = (n: number) => "\0".repeat(n);
    const ids = async (s: AuditSpool) => (await s.unshipped(1e9)).map((r) => r.id);

    test("a zero-filled tail: every complete record is kept; appends after the restart go on and survive", async () => {
      const dir = tmp();
      const recs = [fakeRecord(), fakeRecord(), fakeRecord()];
      writeFileSync(join(dir, SEG1), recs.map(line).join("") + zeros(4096));
      const before = readFileSync(join(dir, SEG1));
      const s = await openSpool(dir);
      expect(await ids(s)).toEqual(recs.map((r) => r.id));
      const later = fakeRecord();
      await s.append(later);
      expect(readFileSync(join(dir, SEG1)).equals(before)).toBe(true); // never appended to
      const again = await openSpool(dir);
      expect(await ids(again)).toEqual([...recs, later].map((r) => r.id));
    });

    test("a torn line, zeros on both sides of complete records, a record whose line end was lost", async () => {
      const dir = tmp();
      const [a, b, c, d] = [fakeRecord(), fakeRecord(), fakeRecord(), fakeRecord()];
      const torn = line(fakeRecord()).slice(0, 150);
      // zeros before a complete line, a torn line cut by zeros, and a last record without its "\n"
      writeFileSync(join(dir, SEG1), line(a) + zeros(512) + line(b) + torn + zeros(700) + line(c) + JSON.stringify(d) + zeros(3000));
      const s = await openSpool(dir);
      expect(await ids(s)).toEqual([a.id, b.id, c.id, d.id]);
      expect((await s.unshipped(10))[1]).toEqual(b);
    });

    test("a segment that is nothing but zeros is dropped; the spool opens and appends", async () => {
      const dir = tmp();
      writeFileSync(join(dir, SEG1), zeros(8192));
      const s = await openSpool(dir);
      expect(s.depth).toBe(0);
      expect(readdirSync(dir)).not.toContain(SEG1);
      const r = fakeRecord();
      await s.append(r);
      expect(await ids(await openSpool(dir))).toEqual([r.id]);
    });

    for (const [what, damage] of [
      ["a torn acknowledgement line", "rec_01TORN"],
      ["a zero-filled acknowledgement tail", zeros(4096)],
      ["a torn line then zeros", `rec_01TO${zeros(100)}`],
    ] as const) {
      test(`${what}: the next acknowledgement after the restart does not glue onto it`, async () => {
        const dir = tmp();
        const [a, b, c] = [fakeRecord(), fakeRecord(), fakeRecord()];
        writeFileSync(join(dir, SEG1), [a, b, c].map(line).join(""));
        writeFileSync(join(dir, ACK1), `${a.id}\n${damage}`);
        const s = await openSpool(dir);
        expect(await ids(s)).toEqual([b.id, c.id]);
        await s.ack([b.id]);
        expect(readFileSync(join(dir, ACK1), "utf8")).toBe(`${a.id}\n${b.id}\n`);
        const again = await openSpool(dir);
        expect(await ids(again)).toEqual([c.id]);
        await again.ack([c.id]); // all acknowledged: the segment goes
        expect(readdirSync(dir).filter((n) => n.startsWith("seg-000000000001."))).toEqual([]);
      });
    }

    test("a torn rejected.jsonl: the next entry is a whole line of its own", async () => {
      const dir = tmp();
      const old = { rejected_at: "2026-01-01T00:00:00.000Z", reason: "x", record: fakeRecord() };
      writeFileSync(join(dir, REJECTED_FILE), `${JSON.stringify(old)}\n{"rejected_at":"2026-01-0${zeros(64)}`);
      const s = await openSpool(dir);
      const r = fakeRecord();
      await s.append(r);
      await s.reject([{ record: r, line: JSON.stringify(r), reason: "refused" }]);
      const lines = readFileSync(join(dir, REJECTED_FILE), "utf8").split("\n");
      expect(lines.at(-1)).toBe("");
      expect(lines.slice(0, -1).map((l) => JSON.parse(l).record.id)).toEqual([old.record.id, r.id]);
    });
  });
});
