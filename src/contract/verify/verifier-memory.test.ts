// The whole verifier (not only one chain's walk, chain-walk.test.ts) holds a bounded state over
// a long store (issue 30: `svc audit verify` held about 0.95 GB per million records and, past
// ~750k keys in one chain, overflowed the stack). A synthetic store of LINES records, each in
// the store chain and in one proxy's chain with valid links (hashed as ingest does), fed in
// chain order as the export sends it, with neighbours swapped now and then: what the verifier
// holds stays a handful of records, and the heap does not grow with the records.
import { expect, test } from "bun:test";
import { syntheticStore } from "./synthetic-store.ts";
import { AuditVerifier } from "./verifier.ts";

const LINES = 300_000;

test(`${LINES} records in one chain: the verifier holds a handful of them and its heap does not grow`, () => {
  // in a process of its own: the heap of this one holds what other tests left
  const child = Bun.spawnSync(
    [process.execPath, "-e", `import { measureVerifier } from ${JSON.stringify(`${import.meta.dir}/synthetic-store.ts`)}; console.log(JSON.stringify(measureVerifier(${LINES})));`],
    { stdout: "pipe", stderr: "pipe" },
  );
  expect(child.stderr.toString()).toBe("");
  const { most, grown, report } = JSON.parse(child.stdout.toString());
  expect(report).toMatchObject({ records: LINES, problems_total: 0, state: "unsigned", uncovered: LINES });
  expect(most).toBeLessThanOrEqual(2);
  // 280,000 more records seen: a per-record map of ids or hashes would be tens of megabytes
  expect(grown).toBeLessThan(8 * 1024 * 1024);
}, 300_000);

test("a broken link deep in a long chain is still named", () => {
  const v = new AuditVerifier(null);
  for (const line of syntheticStore(50_000)) v.add(line.chain_seq === 40_000 ? { ...line, reason: "forged" } : line);
  const r = v.finish();
  expect(r.state).toBe("tampered");
  expect(r.problems.map((p) => p.record_id)).toContain(`aud_${String(40_000).padStart(26, "0")}`);
});
