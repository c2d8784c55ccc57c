// A runtime clock 20 minutes fast, against the real control plane's ingest (in process, its
// clock moved back): the control plane rejects the records as `clock_skew`, the shipper keeps
// them in the spool and sends them again, and once the clocks agree they are stored. Nothing is
// set aside in rejected.jsonl. Runs on PostgreSQL too (SVC_TEST_POSTGRES_URL).
import { afterEach, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { testControlPlane } from "../../src/controlplane/testing.ts";
import { addInstallation, auditRecord } from "../../src/controlplane/runtime/fixtures.ts";
import type { Logger } from "../../src/log/index.ts";
import { AuditShipper } from "../../src/proxy/audit/shipper.ts";
import { AuditSpool, REJECTED_FILE } from "../../src/proxy/audit/spool.ts";
import { ControlPlaneClient } from "../../src/proxy/link/control-plane-client.ts";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

async function until(what: string, ok: () => boolean | Promise<boolean>): Promise<void> {
  const end = Date.now() + 30_000;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(10);
  }
}

test("records dated ahead of the control plane's clock are retried, never set aside, and stored once the clocks agree", async () => {
  let behindMs = 20 * 60_000; // the control plane's clock is 20 minutes behind the runtime's
  const cp = await testControlPlane({ now: () => Date.now() - behindMs });
  const inst = await addInstallation(cp);
  const client = new ControlPlaneClient({ baseUrl: "http://cp.test", token: inst.token, version: "test", egressProxy: null, noProxy: [], ca: null }, (async (input: string, init?: RequestInit) =>
    cp.app.handle(new Request(input, init))) as typeof fetch);
  const dir = mkdtempSync(join(tmpdir(), "svc-skew-"));
  const spool = await AuditSpool.open(dir);
  const warnings: string[] = [];
  const log = { info() {}, warn: (event: string) => void warnings.push(event), error: (event: string) => void warnings.push(event) } as unknown as Logger;
  const shipper = new AuditShipper({ spool, client, log, lingerMs: 0, initialBackoffMs: 5, maxBackoffMs: 20, owner: () => ({ installationId: inst.installationId, organizationId: inst.orgId }) });
  cleanup.push(
    () => rmSync(dir, { recursive: true, force: true }),
    async () => spool.close(),
    async () => shipper.stop(),
  );

  const records = [auditRecord(inst), auditRecord(inst), auditRecord(inst)]; // dated by the runtime's clock
  for (const r of records) await spool.append(r);
  shipper.start();
  await until("two rounds of clock_skew rejections", () => shipper.retried >= 2 * records.length);
  expect(spool.depth).toBe(records.length);
  expect(shipper.rejected).toBe(0);
  expect(existsSync(join(dir, REJECTED_FILE))).toBe(false);
  expect(warnings.filter((w) => w.includes("ahead of the control plane's clock"))).toHaveLength(1);

  behindMs = 0; // the clocks agree (or the records' time has come)
  await until("the records to be stored", () => spool.depth === 0);
  const stored = (await cp.call("GET", cp.org(`/audit-records?installation=${inst.installationId}&limit=100`))).json.records.map((r: { id: string }) => r.id);
  expect(stored.sort()).toEqual(records.map((r) => r.id).sort());
  expect(existsSync(join(dir, REJECTED_FILE))).toBe(false);
});
