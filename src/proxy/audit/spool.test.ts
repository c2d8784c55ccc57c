import { describe, expect, test } from "bun:test";
import { appendFileSync, fdatasyncSync, readdirSync, readFileSync, rmSync, writeSync } from "node:fs";
import { join } from "node:path";
import { SpoolFullError } from "./spool-space.ts";
import { spoolFixtures } from "./spool-test-fixtures.ts";
import { fakeRecord } from "../testing/records.ts";

const { tmp, openSpool } = spoolFixtures("svc-spool-");

// Appending (group commit, failed writes and syncs, a full disk), acknowledging, a writer
// killed: through AuditSpool's API. What a start finds on disk: spool-load.test.ts.
describe("AuditSpool", () => {
  test("append is on disk when it resolves; reopen sees it", async () => {
    const dir = tmp();
    const s = await openSpool(dir);
    const r = fakeRecord();
    await s.append(r);
    expect(s.depth).toBe(1);
    // no close: a second process opening the directory is what a restart after kill -9 sees
    const again = await openSpool(dir);
    expect(await again.unshipped(10)).toEqual([r]);
  });

  test("group commit: 200 concurrent appends share one fdatasync", async () => {
    const s = await openSpool(tmp());
    const before = s.appendSyncs;
    await Promise.all(Array.from({ length: 200 }, async () => s.append(fakeRecord())));
    expect(s.appendSyncs - before).toBe(1);
    expect(s.depth).toBe(200);
    // sequential appends each pay their own sync
    await s.append(fakeRecord());
    await s.append(fakeRecord());
    expect(s.appendSyncs - before).toBe(3);
  });

  test("appends arriving during a sync join the next batch", async () => {
    const s = await openSpool(tmp());
    const first = s.append(fakeRecord());
    await new Promise((r) => setImmediate(r)); // the first batch is now writing
    const rest = Array.from({ length: 50 }, async () => s.append(fakeRecord()));
    await Promise.all([first, ...rest]);
    expect(s.appendSyncs).toBeLessThanOrEqual(2);
    expect(s.depth).toBe(51);
  });

  test("ack removes; unacked survive a crash in order; a torn tail line is skipped", async () => {
    const dir = tmp();
    const s = await openSpool(dir);
    const recs = Array.from({ length: 10 }, () => fakeRecord());
    for (const r of recs) await s.append(r);
    await s.ack([recs[0]!.id, recs[3]!.id, recs[9]!.id, "rec_UNKNOWN"]);
    expect(s.depth).toBe(7);
    const seg = readdirSync(dir).find((n) => n.endsWith(".jsonl"))!;
    appendFileSync(join(dir, seg), '{"id":"rec_TORN","ts":"20'); // crash mid-write
    const again = await openSpool(dir);
    expect((await again.unshipped(100)).map((r) => r.id)).toEqual(recs.filter((_, i) => ![0, 3, 9].includes(i)).map((r) => r.id));
    await again.ack((await again.unshipped(100)).map((r) => r.id));
    const third = await openSpool(dir);
    expect(third.depth).toBe(0);
  });

  test("fully acknowledged closed segments are deleted", async () => {
    const dir = tmp();
    const s = await openSpool(dir, { segmentMaxBytes: 2000 });
    const recs = [];
    for (let i = 0; i < 20; i++) {
      const r = fakeRecord();
      recs.push(r);
      await s.append(r);
    }
    expect(readdirSync(dir).filter((n) => n.endsWith(".jsonl")).length).toBeGreaterThan(3);
    await s.ack(recs.map((r) => r.id));
    expect(readdirSync(dir).filter((n) => n.endsWith(".jsonl")).length).toBe(1);
    await s.close();
    const again = await openSpool(dir);
    expect(again.depth).toBe(0);
    expect(readdirSync(dir).filter((n) => n.endsWith(".jsonl")).length).toBe(1); // the new active one
  });

  test("kill -9 of a writer (16 independent appenders: batches pipelined): every record it saw resolve is there after restart", async () => {
    const dir = tmp();
    const script = join(dir, "..", `writer-${Date.now()}.ts`);
    await Bun.write(
      script,
      `import { AuditSpool } from ${JSON.stringify(join(import.meta.dir, "spool.ts"))};
       import { fakeRecord } from ${JSON.stringify(join(import.meta.dir, "../testing/records.ts"))};
       const s = await AuditSpool.open(${JSON.stringify(join(dir, "spool"))});
       // Each appender waits only for its own record, so a batch is written while the previous syncs.
       await Promise.all(Array.from({ length: 16 }, async () => { for (;;) { const r = fakeRecord(); await s.append(r); process.stdout.write(r.id + "\\n"); } }));`,
    );
    const child = Bun.spawn(["bun", script], { stdout: "pipe" });
    const reader = (child.stdout as ReadableStream<Uint8Array>).getReader();
    let out = "";
    while ((out.match(/\n/g)?.length ?? 0) < 300) out += new TextDecoder().decode((await reader.read()).value);
    child.kill("SIGKILL");
    await child.exited;
    rmSync(script);
    const confirmed = out.split("\n").filter((l) => /^rec_[0-9A-Z]{26}$/.test(l));
    const spool = await openSpool(join(dir, "spool"));
    const present = new Set((await spool.unshipped(1e9)).map((r) => r.id));
    expect(confirmed.length).toBeGreaterThanOrEqual(300);
    for (const id of confirmed) expect(present.has(id)).toBe(true);
    expect(present.size).toBe(spool.depth);
  });

  test("a write that fails halfway (I/O error): its callers are refused; the next append starts on a line of its own", async () => {
    const dir = tmp();
    let failNext = false;
    const writeBatch = (fd: number, buf: Buffer) => {
      if (failNext) {
        failNext = false;
        writeSync(fd, buf, 0, Math.floor(buf.length / 2)); // half of it reached the file
        throw Object.assign(new Error("EIO: i/o error, write"), { code: "EIO" });
      }
      writeSync(fd, buf);
    };
    const s = await openSpool(dir, { writeBatch });
    const first = fakeRecord();
    await s.append(first);
    failNext = true;
    await expect(s.append(fakeRecord())).rejects.toThrow(/EIO/);
    const after = fakeRecord();
    await s.append(after); // answered: it must survive a restart
    expect(s.depth).toBe(2);
    const again = await openSpool(dir);
    expect((await again.unshipped(10)).map((r) => r.id)).toEqual([first.id, after.id]);
  });

  test("pipelined group commit: the next batch is written while a sync runs; each is answered only after its own sync, in order", async () => {
    const dir = tmp();
    const syncs: PromiseWithResolvers<void>[] = [];
    const s = await openSpool(dir, {
      syncBatch: async (fh) => {
        const gate = Promise.withResolvers<void>();
        syncs.push(gate);
        await gate.promise;
        await fh.datasync();
      },
    });
    const answered: string[] = [];
    const a = fakeRecord();
    const b = fakeRecord();
    const pa = s.append(a).then(() => answered.push("a"));
    while (syncs.length < 1) await Bun.sleep(1);
    const pb = s.append(b).then(() => answered.push("b"));
    while (syncs.length < 2) await Bun.sleep(1); // b's sync started while a's is still running
    const seg = readdirSync(dir).find((n) => n.endsWith(".jsonl"))!;
    expect(readFileSync(join(dir, seg), "utf8")).toContain(b.id); // written before a was answered
    syncs[1]!.resolve(); // b's sync returns first: b still waits for a
    await Bun.sleep(20);
    expect(answered).toEqual([]);
    syncs[0]!.resolve();
    await Promise.all([pa, pb]);
    expect(answered).toEqual(["a", "b"]);
  });

  test("a batch that finds the spool quiet is synced at once on the event loop; one that follows closely goes to the thread pool", async () => {
    const dir = tmp();
    const used: string[] = [];
    const s = await openSpool(dir, {
      syncBatch: async (fh) => {
        used.push("pool");
        await fh.datasync();
      },
      syncBatchNow: (fh) => {
        used.push("now");
        fdatasyncSync(fh.fd);
      },
      // Nothing is ever quiet after the first batch (the clock is not part of the test).
      quietMs: Number.POSITIVE_INFINITY,
    });
    const a = fakeRecord();
    const b = fakeRecord();
    await s.append(a); // the first batch of a run: nothing settled before it
    await s.append(b);
    expect(used).toEqual(["now", "pool"]);
    expect(s.appendSyncs).toBe(2);
    const again = await openSpool(dir);
    expect((await again.unshipped(10)).map((r) => r.id)).toEqual([a.id, b.id]);
  });

  test("a failed sync on the event loop refuses its batch and cuts it off; the next append is durable", async () => {
    const dir = tmp();
    let fail = false;
    const s = await openSpool(dir, {
      syncBatchNow: (fh) => {
        if (fail) {
          fail = false;
          throw Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" });
        }
        fdatasyncSync(fh.fd);
      },
      quietMs: 0, // every batch that finds nothing in flight is synced at once
    });
    const first = fakeRecord();
    await s.append(first);
    fail = true;
    await expect(s.append(fakeRecord())).rejects.toThrow(/EIO/);
    const after = fakeRecord();
    await s.append(after);
    expect(s.depth).toBe(2);
    const again = await openSpool(dir);
    expect((await again.unshipped(10)).map((r) => r.id)).toEqual([first.id, after.id]);
  });

  test("pipelined group commit: a failed sync refuses its batch and every batch written after it, and cuts them off", async () => {
    const dir = tmp();
    const syncs: PromiseWithResolvers<void>[] = [];
    let gated = false;
    const s = await openSpool(dir, {
      syncBatch: async (fh) => {
        if (gated) {
          const gate = Promise.withResolvers<void>();
          syncs.push(gate);
          await gate.promise;
        }
        await fh.datasync();
      },
    });
    const first = fakeRecord();
    await s.append(first);
    gated = true;
    // Each outcome is caught at once: both are refused in the same turn.
    const outcome = async (p: Promise<void>) =>
      p.then(
        () => "answered",
        (e: Error) => e.message,
      );
    const pa = outcome(s.append(fakeRecord()));
    while (syncs.length < 1) await Bun.sleep(1);
    const pb = outcome(s.append(fakeRecord()));
    while (syncs.length < 2) await Bun.sleep(1);
    gated = false;
    syncs[0]!.reject(Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" }));
    syncs[1]!.resolve();
    expect(await pa).toMatch(/EIO/);
    expect(await pb).toMatch(/EIO/); // written after the failed one: refused as well
    const after = fakeRecord();
    await s.append(after);
    expect(s.depth).toBe(2);
    const again = await openSpool(dir);
    expect((await again.unshipped(10)).map((r) => r.id)).toEqual([first.id, after.id]);
  });

  test("a full disk: refused with SpoolFullError (503 spool_full), then at once while full; shipping frees the segment and it resumes by itself; nothing answered is lost", async () => {
    const dir = tmp();
    let free = 10 * 1024 * 1024;
    let noSpace = false;
    let writes = 0;
    const writeBatch = (fd: number, buf: Buffer) => {
      writes++;
      if (noSpace) {
        writeSync(fd, buf, 0, Math.floor(buf.length / 3));
        throw Object.assign(new Error("ENOSPC: no space left on device, write"), { code: "ENOSPC" });
      }
      writeSync(fd, buf);
    };
    const s = await openSpool(dir, { writeBatch, freeBytes: () => free, lowSpaceBytes: 8 * 1024 * 1024 });
    expect(s.health()).toMatchObject({ state: "ok", path: dir, free_bytes: free });
    const kept = [fakeRecord(), fakeRecord()];
    for (const r of kept) await s.append(r);
    noSpace = true;
    free = 0;
    const refused = await s.append(fakeRecord()).catch((e) => e);
    expect(refused).toBeInstanceOf(SpoolFullError);
    expect(refused).toMatchObject({ code: "spool_full", status: 503, path: dir, freeBytes: 0 });
    expect(s.health().state).toBe("full");
    const before = writes;
    await expect(s.append(fakeRecord())).rejects.toBeInstanceOf(SpoolFullError);
    expect(writes).toBe(before); // refused without touching the disk
    // The full segment was closed: once its records are shipped it is deleted, with no new space.
    await s.ack((await s.unshipped(10)).map((r) => r.id));
    expect(s.depth).toBe(0);
    const segments = () => readdirSync(dir).filter((n) => n.endsWith(".jsonl")).length;
    for (let i = 0; i < 100 && segments() > 1; i++) await Bun.sleep(20); // the cut-off runs after the refusal
    expect(segments()).toBe(1); // only the new, empty active one
    // Space returns (the deletion, an operator): the spool takes records again by itself.
    noSpace = false;
    free = 5 * 1024 * 1024;
    for (let i = 0; i < 100 && s.health().state === "full"; i++) await Bun.sleep(50);
    expect(s.health().state).toBe("low");
    const later = fakeRecord();
    await s.append(later);
    const again = await openSpool(dir);
    expect((await again.unshipped(10)).map((r) => r.id)).toEqual([later.id]);
  });
});
