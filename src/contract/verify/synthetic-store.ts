// A synthetic store for verifier-memory.test.ts: lines in chain order with valid proxy and
// store links (hashed as ingest does), and a run of the verifier over them that measures what it
// holds. Run in a process of its own by the test, so no other test's garbage is measured.
import { recordHash } from "../audit-chain.ts";
import { chainInputOf, storeDigestOf, storeLinkHash } from "../store-chain.ts";
import { type ExportLine, storedFromLine } from "../stored-line.ts";
import { AuditVerifier, type VerifyReport } from "./verifier.ts";

/** The store's lines in chain order, each hashed and linked to the one before. */
export function* syntheticStore(n: number): Generator<ExportLine> {
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

/**
 * Feeds `n` records to a verifier in chain order, every 1,000th one after its successor; returns
 * the most records it held at once, how much the heap grew from the 20,000th record to the end
 * (after a full collection each time), and the report. Imported by a child process the test
 * starts (verifier-memory.test.ts), which no import graph shows.
 * @public
 */
export function measureVerifier(n: number): { most: number; grown: number; report: VerifyReport } {
  const v = new AuditVerifier(null);
  let before = 0;
  let most = 0;
  let pending: ExportLine | null = null;
  for (const line of syntheticStore(n)) {
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
  return { most, grown, report: v.finish() };
}
