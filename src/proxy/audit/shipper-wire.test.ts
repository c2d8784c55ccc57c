// What the shipper puts on the wire, seen by a real HTTP server through the real client: the
// spooled lines themselves, joined, never parsed and serialized again; a line that is not a
// whole record is still caught on read-back and never sent.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AuditBatchResponse } from "../../contract/runtime-api.ts";
import type { Logger } from "../../log/index.ts";
import { ControlPlaneClient } from "../link/control-plane-client.ts";
import { AuditShipper } from "./shipper.ts";
import { AuditSpool, REJECTED_FILE } from "./spool.ts";
import { fakeRecord } from "../testing/records.ts";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const quiet = { info() {}, warn() {}, error() {} } as unknown as Logger;

/** A control plane that keeps each audit body as the bytes it received and answers with `answer`. */
async function setup(answer: (ids: string[]) => AuditBatchResponse, dir = mkdtempSync(join(tmpdir(), "svc-ship-wire-"))) {
  const bodies: string[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const text = await req.text();
      bodies.push(text);
      const ids = (JSON.parse(text) as { records: { id: string }[] }).records.map((r) => r.id);
      return Response.json(answer(ids));
    },
  });
  const client = new ControlPlaneClient({ baseUrl: `http://127.0.0.1:${server.port}`, token: "svc_rt_x", version: "test", egressProxy: null, noProxy: [], ca: null });
  const spool = await AuditSpool.open(dir);
  const shipper = new AuditShipper({ spool, client, log: quiet, lingerMs: 0, initialBackoffMs: 5, maxBackoffMs: 20 });
  cleanup.push(
    () => rmSync(dir, { recursive: true, force: true }),
    () => void server.stop(true),
    async () => spool.close(),
    async () => shipper.stop(),
  );
  return { dir, spool, shipper, bodies };
}

/** Waits for `cond`; the deadline is generous because a loaded CI machine (load 12 on 2 cores) ships slowly. */
async function until(cond: () => boolean, what: string) {
  const end = Date.now() + 30_000;
  while (Date.now() < end) {
    if (cond()) return;
    await Bun.sleep(5);
  }
  throw new Error(`timed out waiting for ${what}`);
}

/**
 * A record's JSON text as another writer may have spelled it: escapes and a number form that
 * JSON.parse + JSON.stringify would rewrite (`\u00e9` → `é`, `\/` → `/`, `1.50` → `1.5`).
 */
function unusualLine(): { id: string; line: string } {
  const r = fakeRecord();
  const line = JSON.stringify(r).replace('"reason":"policy"', '"reason":"caf\\u00e9 \\/ policy"').replace(/}$/, ',"cost":1.50}');
  return { id: r.id, line };
}

const ackAll = (ids: string[]): AuditBatchResponse => ({ acknowledged: ids, inserted: ids.length, duplicates: 0 });

describe("the audit batch on the wire", () => {
  test("the body is the spooled lines joined, byte for byte: a spelling JSON.parse + stringify would change arrives unchanged", async () => {
    const t = await setup(ackAll);
    const plain = fakeRecord();
    const odd = unusualLine();
    await t.spool.append(plain);
    await t.spool.appendLine(odd.id, odd.line);
    const lines = [JSON.stringify(plain), odd.line];
    t.shipper.start();
    await until(() => t.spool.depth === 0, "the batch to be acknowledged");
    const expected = `{"records":[${lines.join(",")}]}`;
    expect(t.bodies).toEqual([expected]);
    // The assertion tells the two apart: re-serializing gives other bytes.
    expect(JSON.stringify({ records: lines.map((l) => JSON.parse(l) as unknown) })).not.toBe(expected);
  });

  test("a record the control plane rejects is kept in rejected.jsonl as its spooled line, byte for byte", async () => {
    const odd = unusualLine();
    const t = await setup((ids) => ({ acknowledged: [], inserted: 0, duplicates: 0, rejected: ids.map((id) => ({ id, code: "malformed" as const, reason: "malformed: /cost" })) }));
    await t.spool.appendLine(odd.id, odd.line);
    t.shipper.start();
    await until(() => t.spool.depth === 0, "the record to be set aside");
    const kept = readFileSync(join(t.dir, REJECTED_FILE), "utf8");
    expect(kept).toMatch(/^\{"rejected_at":"[^"]+","reason":"malformed: \/cost","record":/);
    expect(kept.endsWith(`"record":${odd.line}}\n`)).toBe(true);
  });

  test("a spooled line whose brackets close but which is not JSON is skipped on read-back, never sent; the rest ships", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-ship-wire-"));
    const [a, b] = [fakeRecord(), fakeRecord()];
    const broken = JSON.stringify(fakeRecord()).replace('"via_installation":false', '"via_installation":fals'); // a damaged byte
    writeFileSync(join(dir, "seg-000000000001.jsonl"), `${JSON.stringify(a)}\n${broken}\n${JSON.stringify(b)}\n`);
    const t = await setup(ackAll, dir);
    expect(t.spool.depth).toBe(3); // indexed at start: the cheap line check cannot tell
    t.shipper.start();
    // The spool's depth drops as ack begins, before the shipper counts the batch: wait for both.
    await until(() => t.spool.depth === 0 && t.shipper.shipped > 0, "the spool to empty and the batch to be counted");
    expect(t.bodies).toEqual([`{"records":[${JSON.stringify(a)},${JSON.stringify(b)}]}`]);
    expect(t.shipper.shipped).toBe(2);
  });
});
