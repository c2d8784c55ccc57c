import { afterEach, expect, test } from "bun:test";
import { fdatasyncSync, mkdtempSync, readFileSync, rmSync, writeSync } from "node:fs";
import { open } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CommitHost, type CommittedRecord, GroupCommit, INLINE_PAUSE_MS, QUIET_MS, SLOW_INLINE_SYNC_MS } from "./spool-commit.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A GroupCommit on a real file, with a clock the test moves and a record of how each batch was synced. */
async function commitOnFile(syncNowCost: () => number) {
  const dir = mkdtempSync(join(tmpdir(), "svc-commit-"));
  dirs.push(dir);
  const path = join(dir, "seg-1.jsonl");
  const fh = await open(path, "w+");
  let clock = 1_000_000;
  const used: string[] = [];
  const committed: CommittedRecord[] = [];
  const host: CommitHost = {
    segmentMaxBytes: 1 << 20,
    now: () => clock,
    writeBatch: (fd, buf, position) => void writeSync(fd, buf, 0, buf.length, position),
    syncBatch: async (h) => {
      used.push("pool");
      await h.datasync();
    },
    syncBatchNow: (h) => {
      used.push("now");
      fdatasyncSync(h.fd);
      clock += syncNowCost(); // what the sync cost, as the clock sees it
    },
    committed: (_seq, records) => void committed.push(...records),
    refusal: (e) => e,
    rotate: async () => {
      throw new Error("no rotation in this test");
    },
    rotateAfterFailure: () => false,
  };
  const gc = new GroupCommit(host, { seq: 1, fh });
  return {
    gc,
    used,
    committed,
    path,
    /** Let time pass on the test's clock. */
    wait: (ms: number) => void (clock += ms),
  };
}

test("a slow sync on the event loop sends the next quiet batches to the thread pool for a while; a sound disk keeps syncing inline", async () => {
  let cost = 0.2;
  const c = await commitOnFile(() => cost);
  await c.gc.append("a", '{"id":"a"}');
  c.wait(QUIET_MS);
  await c.gc.append("b", '{"id":"b"}');
  expect(c.used).toEqual(["now", "now"]); // quiet batches on a sound disk: inline
  expect(c.gc.slowInlineSyncs).toBe(0);

  cost = SLOW_INLINE_SYNC_MS + 5; // the disk is in trouble: this inline sync stalled the loop
  c.wait(QUIET_MS);
  await c.gc.append("c", '{"id":"c"}');
  expect(c.gc.slowInlineSyncs).toBe(1);
  cost = 0.2;
  for (const id of ["d", "e"]) {
    c.wait(QUIET_MS * 10);
    await c.gc.append(id, `{"id":"${id}"}`);
  }
  expect(c.used).toEqual(["now", "now", "now", "pool", "pool"]); // quiet, but not inline while paused

  c.wait(INLINE_PAUSE_MS);
  await c.gc.append("f", '{"id":"f"}');
  expect(c.used.at(-1)).toBe("now"); // the pause is over
  await c.gc.close();
  // Every record answered is on disk, in order, whichever way it was synced.
  expect(c.committed.map((r) => r.id)).toEqual(["a", "b", "c", "d", "e", "f"]);
  expect(readFileSync(c.path, "utf8")).toBe(["a", "b", "c", "d", "e", "f"].map((id) => `{"id":"${id}"}\n`).join(""));
});
