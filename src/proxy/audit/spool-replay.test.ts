// Replaying set-aside records (spool-replay.ts) on a real spool: the records go back with
// their exact spooled lines; a damaged line is kept in rejected.jsonl; records set aside while
// a replay runs are not lost; a replay cut short by a crash is finished by the next one.
import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fakeRecord } from "../testing/records.ts";
import { AuditSpool, REJECTED_FILE } from "./spool.ts";
import { recordLine, REPLAYING_FILE, replayRejected } from "./spool-replay.ts";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function spoolWithRejected(n: number) {
  const dir = mkdtempSync(join(tmpdir(), "svc-replay-"));
  const spool = await AuditSpool.open(dir);
  cleanup.push(
    () => rmSync(dir, { recursive: true, force: true }),
    async () => spool.close(),
  );
  // Lines as spooled, with an exact 64-bit number the record carries nowhere else (key order kept too).
  const lines = Array.from({ length: n }, (_, i) => JSON.stringify(fakeRecord()).replace('"kind"', `"zz_exact":900719925474099${i}3,"kind"`));
  for (const l of lines) await spool.appendLine(JSON.parse(l).id, l);
  const entries = (await spool.unshippedLines(n)).map((s) => ({ ...s, reason: "POST /api/v1/runtime/audit-records answered 413" }));
  await spool.reject(entries);
  expect(spool.depth).toBe(0);
  return { dir, spool, lines };
}

describe("replayRejected", () => {
  test("the set-aside records go back into the spool with their exact lines; rejected.jsonl is gone", async () => {
    const { dir, spool, lines } = await spoolWithRejected(3);
    const r = await replayRejected(dir, async (id, line) => spool.appendLine(id, line));
    expect(r).toEqual({ replayed: 3, kept: 0 });
    expect(spool.depth).toBe(3);
    expect((await spool.unshippedLines(10)).map((s) => s.line)).toEqual(lines);
    expect(existsSync(join(dir, REJECTED_FILE))).toBe(false);
    expect(existsSync(join(dir, REPLAYING_FILE))).toBe(false);
    expect(await replayRejected(dir, async (id, line) => spool.appendLine(id, line))).toEqual({ replayed: 0, kept: 0 });
  });

  test("a damaged line is kept in rejected.jsonl; a record set aside during the replay is not lost", async () => {
    const { dir, spool } = await spoolWithRejected(2);
    writeFileSync(join(dir, REJECTED_FILE), `${readFileSync(join(dir, REJECTED_FILE), "utf8")}{"rejected_at":"x","reason":"y","record":{"id":"rec_TO\0\0\0`);
    const late = fakeRecord();
    let once = true;
    const r = await replayRejected(dir, async (id, line) => {
      // the shipper sets another record aside meanwhile: it goes to a new rejected.jsonl
      if (once) {
        once = false;
        await spool.appendLine(late.id, JSON.stringify(late));
        await spool.reject((await spool.unshippedLines(100)).filter((s) => s.record.id === late.id).map((s) => ({ ...s, reason: "malformed" })));
      }
      return spool.appendLine(id, line);
    });
    expect(r).toEqual({ replayed: 2, kept: 1 });
    const left = readFileSync(join(dir, REJECTED_FILE), "utf8").split("\n").filter(Boolean);
    expect(left).toHaveLength(2);
    expect(left.some((l) => l.includes(late.id))).toBe(true);
    expect(left.some((l) => l.startsWith('{"rejected_at":"x"'))).toBe(true);
  });

  test("a replay cut short (the file renamed, nothing appended yet) is finished by the next one", async () => {
    const { dir, spool } = await spoolWithRejected(2);
    renameSync(join(dir, REJECTED_FILE), join(dir, REPLAYING_FILE)); // a crash right after the rename
    expect(await replayRejected(dir, async (id, line) => spool.appendLine(id, line))).toEqual({ replayed: 2, kept: 0 });
    expect(spool.depth).toBe(2);
    expect(existsSync(join(dir, REPLAYING_FILE))).toBe(false);
  });

  test("recordLine: the record's own bytes inside an entry; a hand-made entry is serialized; garbage is none", () => {
    const rec = '{"id":"rec_1","n":12345678901234567890}';
    expect(recordLine(`{"rejected_at":"2026-01-01T00:00:00.000Z","reason":"r \\"q\\"","record":${rec}}`)).toEqual({ id: "rec_1", line: rec });
    expect(recordLine('{"reason":"r","record":{"id":"rec_2"},"rejected_at":"t"}')).toEqual({ id: "rec_2", line: '{"id":"rec_2"}' });
    expect(recordLine('{"record":{"no":"id"}}')).toBeNull();
    expect(recordLine("not json")).toBeNull();
  });
});
