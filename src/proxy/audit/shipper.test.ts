// The shipper against a scripted control plane: records the control plane rejects are set
// aside (rejected.jsonl, a warning naming them) and shipping goes on; a status for the whole
// request (any 4xx or 5xx, from the control plane or an ingress) sets nothing aside: retried
// with backoff, counted, logged once (a 413 also halves the batch); records of another
// installation are never sent; a refused credential keeps every record in the spool.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, readFileSync, rmdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AuditRecord } from "../../contract/audit.ts";
import type { AuditBatchResponse } from "../../contract/runtime-api.ts";
import type { Logger } from "../../log/index.ts";
import { ControlPlaneError, credentialRefusal } from "../link/control-plane-client.ts";
import { AuditShipper, isRetryableRejection } from "./shipper.ts";
import { AuditSpool, REJECTED_FILE } from "./spool.ts";
import { fakeRecord } from "../testing/records.ts";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function setup(answer: (records: AuditRecord[]) => AuditBatchResponse, opts: { owner?: { installationId: string; organizationId: string } | null; onError?: (e: unknown) => boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "svc-ship-"));
  const spool = await AuditSpool.open(dir);
  const logs: { level: string; event: string; fields: Record<string, unknown> }[] = [];
  const f =
    (level: string) =>
    (event: string, fields: Record<string, unknown> = {}) =>
      void logs.push({ level, event, fields });
  const log = { info: f("info"), warn: f("warn"), error: f("error") } as unknown as Logger;
  const sent: string[][] = [];
  const client = {
    async shipAudit(lines: readonly string[]) {
      const records = lines.map((l) => JSON.parse(l) as AuditRecord);
      sent.push(records.map((r) => r.id));
      return answer(records);
    },
  };
  const shipper = new AuditShipper({
    spool,
    client,
    log,
    lingerMs: 0,
    initialBackoffMs: 5,
    maxBackoffMs: 20,
    ...("owner" in opts ? { owner: () => opts.owner ?? null } : {}),
    ...(opts.onError ? { onError: opts.onError } : {}),
  });
  cleanup.push(
    () => rmSync(dir, { recursive: true, force: true }),
    async () => spool.close(),
    async () => shipper.stop(),
  );
  return { dir, spool, shipper, sent, logs };
}

const ok = (records: AuditRecord[]): AuditBatchResponse => ({ acknowledged: records.map((r) => r.id), inserted: records.length, duplicates: 0 });
const rejectedLines = (dir: string) =>
  readFileSync(join(dir, REJECTED_FILE), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { reason: string; record: AuditRecord });
async function until(cond: () => boolean, what: string) {
  for (let i = 0; i < 400; i++) {
    if (cond()) return;
    await Bun.sleep(5);
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe("AuditShipper", () => {
  test("records the control plane names in `rejected` are set aside and acknowledged; shipping goes on", async () => {
    const bad = fakeRecord({ installation_id: "inst_OTHER" });
    const t = await setup((records) => ({
      acknowledged: records.filter((r) => r.id !== bad.id).map((r) => r.id),
      inserted: records.length - 1,
      duplicates: 0,
      rejected: records.some((r) => r.id === bad.id) ? [{ id: bad.id, reason: "not the calling installation" }] : [],
    }));
    const good = [fakeRecord(), fakeRecord()];
    for (const r of [good[0]!, bad, good[1]!]) await t.spool.append(r);
    t.shipper.start();
    await until(() => t.spool.depth === 0, "the spool to empty");
    expect(rejectedLines(t.dir)).toEqual([{ rejected_at: expect.any(String), reason: "not the calling installation", record: bad } as never]);
    const warn = t.logs.find((l) => l.level === "warn" && l.event.startsWith("audit records set aside"))!;
    expect(warn.fields).toMatchObject({ count: 1, ids: bad.id });
    // later records still ship
    const later = fakeRecord();
    await t.spool.append(later);
    t.shipper.wake();
    await until(() => t.sent.some((b) => b.includes(later.id)) && t.spool.depth === 0, "a later record to ship");
    expect(t.shipper.rejected).toBe(1);
  });

  test("clock skew: a record dated ahead of the control plane's clock is kept and sent again, never set aside", async () => {
    const fast = fakeRecord({ ts: new Date(Date.now() + 20 * 60_000).toISOString() }); // a runtime clock 20 minutes fast
    let clockCaughtUp = false;
    const t = await setup((records) => {
      const skewed = clockCaughtUp ? [] : records.filter((r) => r.id === fast.id);
      return {
        acknowledged: records.filter((r) => !skewed.includes(r)).map((r) => r.id),
        inserted: records.length - skewed.length,
        duplicates: 0,
        rejected: skewed.map((r) => ({
          id: r.id,
          code: "clock_skew" as const,
          reason: `record ${r.id} has timestamp ${r.ts}, more than 15 minutes ahead of the control plane's clock; check the runtime's clock`,
        })),
      };
    });
    const others = [fakeRecord(), fakeRecord()];
    for (const r of [fast, ...others]) await t.spool.append(r);
    t.shipper.start();
    await until(() => t.sent.length >= 3, "the skewed record to be sent again");
    expect(t.spool.depth).toBe(1); // the others shipped; the skewed one waits in the spool
    expect(t.shipper.retried).toBeGreaterThanOrEqual(2);
    expect(t.logs.filter((l) => l.event.includes("ahead of the control plane's clock")).length).toBe(1); // once per streak
    clockCaughtUp = true;
    await until(() => t.spool.depth === 0, "the skewed record to ship");
    expect(t.sent.flat().filter((id) => id === fast.id).length).toBeGreaterThanOrEqual(3);
    expect(t.shipper.rejected).toBe(0);
    expect(() => readFileSync(join(t.dir, REJECTED_FILE))).toThrow(); // nothing set aside
  });

  test("rejected.jsonl cannot be written (a full disk): the record stays spooled, shipping goes on, and it is set aside once it can be", async () => {
    const bad = fakeRecord();
    const t = await setup((records) => ({
      acknowledged: records.filter((r) => r.id !== bad.id).map((r) => r.id),
      inserted: records.length - 1,
      duplicates: 0,
      rejected: records.filter((r) => r.id === bad.id).map((r) => ({ id: r.id, code: "malformed" as const, reason: "malformed" })),
    }));
    mkdirSync(join(t.dir, REJECTED_FILE)); // appending to it fails, as on a full disk
    const good = fakeRecord();
    await t.spool.append(bad);
    await t.spool.append(good);
    t.shipper.start();
    await until(() => t.sent.length >= 3, "shipping to go on after the failure");
    expect(t.spool.depth).toBe(1); // the good one shipped; the bad one is kept, not lost
    rmdirSync(join(t.dir, REJECTED_FILE));
    await until(() => t.spool.depth === 0, "the record to be set aside");
    expect(rejectedLines(t.dir).map((l) => l.record.id)).toEqual([bad.id]);
  });

  test("a backlog the spool indexes after the start (loadInBackground) is shipped once it is in", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-ship-bg-"));
    const backlog = Array.from({ length: 300 }, () => fakeRecord());
    writeFileSync(join(dir, "seg-000000000001.jsonl"), backlog.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const spool = await AuditSpool.open(dir, { loadInBackground: true });
    const got = new Set<string>();
    const client = { shipAudit: async (lines: readonly string[]) => ok(lines.map((l) => JSON.parse(l) as AuditRecord).map((r) => (got.add(r.id), r))) };
    const log = { info() {}, warn() {}, error() {} } as unknown as Logger;
    const shipper = new AuditShipper({ spool, client, log, lingerMs: 0, initialBackoffMs: 5, maxBackoffMs: 20 });
    cleanup.push(
      () => rmSync(dir, { recursive: true, force: true }),
      async () => spool.close(),
      async () => shipper.stop(),
    );
    shipper.start(); // before the backlog is indexed: nothing to ship yet, and no append will wake it
    await until(() => got.size === backlog.length && spool.depth === 0, "the backlog to ship");
  });

  test("a field the control plane does not know (a newer proxy's): kept and sent again, never set aside, and the log says to upgrade it", async () => {
    const newer = fakeRecord();
    let upgraded = false;
    const t = await setup((records) => {
      const refused = upgraded ? [] : records.filter((r) => r.id === newer.id);
      return {
        acknowledged: records.filter((r) => !refused.includes(r)).map((r) => r.id),
        inserted: records.length - refused.length,
        duplicates: 0,
        rejected: refused.map((r) => ({ id: r.id, code: "unsupported_field" as const, reason: `record ${r.id} carries field(s) this control plane (svc 0.1.99) does not know: chain_v` })),
      };
    });
    await t.spool.append(newer);
    await t.spool.append(fakeRecord());
    t.shipper.start();
    await until(() => t.sent.length >= 3, "the record to be sent again");
    expect(t.spool.depth).toBe(1);
    expect(t.shipper.rejected).toBe(0);
    expect(t.logs.filter((l) => l.event.includes("upgrade the control plane")).length).toBe(1);
    upgraded = true;
    await until(() => t.spool.depth === 0, "the record to ship once the control plane is upgraded");
  });

  test("clock skew told by an older control plane only in the reason is retried too", () => {
    expect(isRetryableRejection({ id: "rec_1", reason: "record rec_1 has timestamp x, more than 15 minutes ahead of the control plane's clock; check the runtime's clock" })).toBe(true);
    expect(isRetryableRejection({ id: "rec_1", reason: "record rec_1 is malformed: /ts" })).toBe(false);
    expect(isRetryableRejection({ id: "rec_1", code: "malformed", reason: "ahead of the control plane's clock" })).toBe(false);
  });

  test("a 413 from an ingress sets nothing aside: 300 of 300 stay spooled, retried in smaller batches and with backoff, counted and logged once; all ship once it takes them", async () => {
    let limitBytes = 0; // the ingress refuses every request until its limit is raised
    const t = await setup((records) => {
      const bytes = JSON.stringify(records).length;
      if (bytes > limitBytes) throw new ControlPlaneError(`POST /api/v1/runtime/audit-records answered 413: <html>413 Request Entity Too Large</html>`, 413, null, "audit-records");
      return ok(records);
    });
    const records = Array.from({ length: 300 }, () => fakeRecord());
    for (const r of records) await t.spool.append(r);
    t.shipper.start();
    await until(() => t.sent.some((b) => b.length === 1) && t.sent.length >= 15, "halving down to one record, then retries");
    expect(t.spool.depth).toBe(300);
    expect(() => readFileSync(join(t.dir, REJECTED_FILE))).toThrow(); // nothing set aside
    expect(t.shipper.rejected).toBe(0);
    expect(t.shipper.failing).toBe(true);
    expect(t.shipper.failures.get("413")).toBeGreaterThanOrEqual(15);
    expect(t.sent.slice(0, 10).map((b) => b.length)).toEqual([300, 150, 75, 38, 19, 10, 5, 3, 2, 1]);
    const warned = t.logs.filter((l) => l.event.startsWith("audit shipping failed for the whole batch"));
    expect(warned).toHaveLength(1);
    expect(warned[0]!.fields).toMatchObject({ status: "413", spool_depth: 300 });
    limitBytes = Number.MAX_SAFE_INTEGER; // the ingress's limit raised
    await until(() => t.spool.depth === 0, "the spool to empty");
    expect(new Set(t.sent.flat())).toEqual(new Set(records.map((r) => r.id)));
    expect(t.shipper.shipped).toBe(300);
    expect(t.shipper.failing).toBe(false);
  });

  test.each([
    [400, "validation_failed"],
    [404, "not_found"],
    [422, "validation_failed"],
    [500, "internal"],
    [502, null],
  ] as const)("a whole-request %i sets nothing aside: retried with backoff until it is taken", async (status, code) => {
    let refuse = 3;
    const t = await setup((records) => {
      if (refuse-- > 0) throw new ControlPlaneError(`POST /api/v1/runtime/audit-records answered ${status}`, status, code, "audit-records");
      return ok(records);
    });
    const records = [fakeRecord(), fakeRecord(), fakeRecord()];
    for (const r of records) await t.spool.append(r);
    t.shipper.start();
    await until(() => t.spool.depth === 0, "the spool to empty");
    expect(t.sent.map((b) => b.length)).toEqual([3, 3, 3, 3]);
    expect(t.shipper.failures.get(String(status))).toBe(3);
    expect(() => readFileSync(join(t.dir, REJECTED_FILE))).toThrow();
    expect(t.shipper.shipped).toBe(3);
  });

  test("records of another installation are never sent: set aside, the rest ships", async () => {
    const t = await setup(ok, { owner: { installationId: "inst_1", organizationId: "org_1" } });
    const foreign = [fakeRecord({ installation_id: "inst_PREVIOUS" }), fakeRecord({ organization_id: "org_PREVIOUS" })];
    const mine = fakeRecord();
    for (const r of [...foreign, mine]) await t.spool.append(r);
    t.shipper.start();
    await until(() => t.spool.depth === 0, "the spool to empty");
    expect(t.sent.flat()).toEqual([mine.id]);
    expect(rejectedLines(t.dir).map((l) => l.record.id)).toEqual(foreign.map((r) => r.id));
    expect(rejectedLines(t.dir)[0]!.reason).toContain("inst_PREVIOUS");
  });

  test("nothing ships while the installation is unknown (before bootstrap)", async () => {
    const t = await setup(ok, { owner: null });
    await t.spool.append(fakeRecord());
    t.shipper.start();
    await Bun.sleep(60);
    expect(t.sent).toEqual([]);
    expect(t.spool.depth).toBe(1);
  });

  test("a refused credential (401) keeps every record in the spool and reports it; they ship once the token works again", async () => {
    let refuse = true;
    const seen: unknown[] = [];
    const t = await setup(
      (records) => {
        if (refuse) throw new ControlPlaneError("POST /api/v1/runtime/audit-records answered 401 unauthorized", 401, "unauthorized", "audit-records");
        return ok(records);
      },
      { onError: (e) => (seen.push(e), credentialRefusal(e) !== null) },
    );
    const records = [fakeRecord(), fakeRecord()];
    for (const r of records) await t.spool.append(r);
    t.shipper.start();
    await until(() => t.sent.length >= 3, "a few refused attempts");
    expect(t.spool.depth).toBe(2);
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(() => readFileSync(join(t.dir, REJECTED_FILE))).toThrow();
    refuse = false;
    t.shipper.resume();
    await until(() => t.spool.depth === 0, "the spool to empty once accepted");
    expect(t.shipper.rejected).toBe(0);
  });

  test("draining a backlog collects garbage every collectEveryRecords shipped in full batches; a trickle never does, nor full batches with no backlog behind them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-ship-gc-"));
    const backlog = Array.from({ length: 1200 }, () => fakeRecord());
    writeFileSync(join(dir, "seg-000000000001.jsonl"), backlog.map((r) => `${JSON.stringify(r)}\n`).join(""));
    const spool = await AuditSpool.open(dir);
    const client = { shipAudit: async (lines: readonly string[]) => ok(lines.map((l) => JSON.parse(l) as AuditRecord)) };
    const log = { info() {}, warn() {}, error() {} } as unknown as Logger;
    let collections = 0;
    const shipper = new AuditShipper({ spool, client, log, lingerMs: 0, batchSize: 100, collectEveryRecords: 250, collect: () => void collections++ });
    cleanup.push(
      () => rmSync(dir, { recursive: true, force: true }),
      async () => spool.close(),
      async () => shipper.stop(),
    );
    shipper.start();
    await until(() => shipper.shipped === 1200, "the backlog to ship");
    // 12 full batches of 100, counted while 250 or more wait behind them (depth 1100 … 300 after
    // each): one collection per 300 records shipped (the first batch past 250)
    expect(collections).toBe(3);
    // 300 records more, three at a time (batches never full): no collection
    for (let i = 1; i <= 100; i++) {
      await Promise.all([spool.append(fakeRecord()), spool.append(fakeRecord()), spool.append(fakeRecord())]);
      shipper.wake(); // as the daemon does after each append
      await until(() => shipper.shipped === 1200 + 3 * i, "a few records to ship");
    }
    expect(collections).toBe(3);
    // a steady load: full batches of 100, each shipped before the next arrives (no backlog)
    for (let i = 1; i <= 10; i++) {
      await Promise.all(Array.from({ length: 100 }, async () => spool.append(fakeRecord())));
      shipper.wake();
      await until(() => shipper.shipped === 1500 + 100 * i, "a full batch to ship");
    }
    expect(collections).toBe(3);
  });
});
