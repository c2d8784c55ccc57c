// The whole verifier (not only one chain's walk, chain-walk.test.ts) holds a bounded state over
// a long store (issue 30: `svc audit verify` held about 0.95 GB per million records and, past
// ~750k keys in one chain, overflowed the stack). A synthetic store of LINES records, each in
// the store chain and in one proxy's chain with valid links (hashed as ingest does), fed in
// chain order as the export sends it, with neighbours swapped now and then: what the verifier
// holds stays a handful of records, and the heap does not grow with the records.
import { expect, test } from "bun:test";
import { recordHash } from "../audit-chain.ts";
import { chainInputOf, storeDigestOf, storeLinkHash } from "../store-chain.ts";
import { type ExportLine, storedFromLine } from "../stored-line.ts";
import { AuditVerifier } from "./verifier.ts";

const LINES = 300_000;

/** The store's lines in chain order, each hashed and linked to the one before. */
function* store(n: number): Generator<ExportLine> {
  let proxyPrev: string | null = null;
  let storePrev: string | null = null;
  for (let seq = 1; seq <= n; seq++) {
    const line: ExportLine = {
      id: `aud_${String(seq).padStart(26, "0")}`,
      ts: new Date(1_800_000_000_000 + seq).toISOString(),
      received_at: new Date(1_800_000_000_000 + seq).toISOString(),
      kind: "tool",
      harness: "chatui",
      organization_id: "org_1",
      workspace_id: "ws_1",
      installation_id: "ins_1",
      agent_id: "agt_1",
      action: "tool:crm.lookup",
      tool_name: "crm.lookup",
      tool_server: "crm",
      decision: "permit",
      reason: "policy",
      policy_revision: 1,
      subject: { user_id: null, remote_user_id: "u1", via_installation: false },
      args_digest: null,
      digest_key_id: null,
      chain_id: "chn_1",
      chain_seq: seq,
      chain_prev: proxyPrev,
      encryption: { mode: "digest-only" },
      ciphertext_sha256: null,
      store: { chain: "store", seq, prev: storePrev },
    };
    const stored = storedFromLine(line);
    proxyPrev = recordHash(chainInputOf(stored), null);
    storePrev = storeLinkHash({ chain: "store", seq, prev: line.store!.prev }, storeDigestOf(proxyPrev, stored));
    yield line;
  }
}

test(`${LINES} records in one chain: the verifier holds a handful of them and its heap does not grow`, () => {
  const v = new AuditVerifier(null);
  let before = 0;
  let most = 0;
  let pending: ExportLine | null = null;
  for (const line of store(LINES)) {
    // every 1,000th pair swapped: #1000 after #1001
    if (line.chain_seq! % 1000 === 0) {
      pending = line;
      continue;
    }
    v.add(line);
    if (pending) {
      v.add(pending);
      pending = null;
    }
    most = Math.max(most, v.held());
    if (line.chain_seq === 20_000) {
      Bun.gc(true);
      before = process.memoryUsage().heapUsed;
    }
  }
  if (pending) v.add(pending);
  Bun.gc(true);
  const grown = process.memoryUsage().heapUsed - before;
  const r = v.finish();
  expect(r).toMatchObject({ records: LINES, problems_total: 0, state: "unsigned", uncovered: LINES });
  expect(most).toBeLessThanOrEqual(2);
  // 280,000 more records seen: a per-record map of ids or hashes would be tens of megabytes
  expect(grown).toBeLessThan(8 * 1024 * 1024);
}, 300_000);

test("a broken link deep in a long chain is still named", () => {
  const v = new AuditVerifier(null);
  for (const line of store(50_000)) v.add(line.chain_seq === 40_000 ? { ...line, reason: "forged" } : line);
  const r = v.finish();
  expect(r.state).toBe("tampered");
  expect(r.problems.map((p) => p.record_id)).toContain(`aud_${String(40_000).padStart(26, "0")}`);
});
