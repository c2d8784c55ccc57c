// Concurrent ingest (issue 30, item 4): on PostgreSQL, shippers storing batches at once for one
// organization turned into 500s ("could not serialize access" on audit_chain_heads, code
// UNKNOWN) once the store grew. Ingest now takes its organization's store-chain head with a row
// lock first, in READ COMMITTED, so the batches take turns instead of failing; and whatever
// conflict still runs out of retries is a 503 with Retry-After (http/problem.test.ts), never a
// 500. Eight shippers, each its own installation and proxy chain, 25 batches each, all at once:
// every batch is answered 200, every record is numbered once in commit order, and the export
// verifies. Runs on SQLite and, with SVC_TEST_POSTGRES_URL, on PostgreSQL (scripts/test.sh).
import { expect, test } from "bun:test";
import type { ExportLine } from "../../contract/stored-line.ts";
import { verifyLines } from "../../contract/verify/index.ts";
import { AuditChain } from "../../proxy/audit/chain.ts";
import { addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";

const SHIPPERS = 8;
const BATCHES = 25;
const PER_BATCH = 40;

test("8 shippers storing at once: no error, every record numbered once, the store verifies", async () => {
  const cp = await testControlPlane();
  const statuses: number[] = [];
  await Promise.all(
    Array.from({ length: SHIPPERS }, async () => {
      const inst = await addInstallation(cp);
      const chain = new AuditChain();
      for (let b = 0; b < BATCHES; b++) {
        const records = Array.from({ length: PER_BATCH }, () => chain.stamp(auditRecord(inst)));
        const r = await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records } });
        statuses.push(r.status);
        if (r.status !== 200) throw new Error(`batch answered ${r.status}: ${r.text.slice(0, 300)}`);
      }
    }),
  );
  expect(statuses.filter((s) => s !== 200)).toEqual([]);
  expect((await cp.call("POST", cp.org("/audit-checkpoints"))).status).toBe(201);
  const lines = (await cp.call("GET", cp.org("/audit-records/export?order=chain"))).text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ExportLine);
  const total = SHIPPERS * BATCHES * PER_BATCH;
  // the runtime records make the store chain; the organization's bootstrap event is the admin chain's
  expect(lines.filter((l) => l.store?.chain === "store").map((l) => l.store?.seq)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
  const report = verifyLines(lines, (await cp.call("GET", cp.org("/audit-checkpoints"))).json);
  expect(report).toMatchObject({ state: "verified", problems: [], records: total + 1, chains: SHIPPERS + 1 }); // + the bootstrap event, in the control plane's chain
}, 120_000);
