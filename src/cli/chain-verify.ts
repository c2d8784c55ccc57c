// The check behind `svc audit verify` (pure: records and checkpoints in, a report out). It
// recomputes every exported record's hash (contract/audit-chain.ts) and walks each chain
// down from the head the latest signed checkpoint names: the record at each number must hash
// to what the record above it (or the signed head) says, so a record changed, removed or
// inserted anywhere below a signed head shows, and is named. Records after the checkpoint are
// checked link by link but are not covered until the next one; records written before
// chaining are counted. The checkpoints themselves must carry valid signatures by one key,
// be numbered 1, 2, … and each name the hash of the one before. A record's `tool_server`
// (MCP, issue 13) is outside the chain form but bound to its chained `tool_name`: one that
// names another server was changed.
import { type CheckpointBody, type CheckpointFloor, type CheckpointView, type ChainInput, bodyHash, chainLink, checkpointSignatureValid, recordHash, toolServerOf } from "../contract/audit-chain.ts";

/** An export line (`svc audit export` JSONL): the record view plus the ciphertext's digest. */
export type ExportedRecord = Omit<ChainInput, "recipient_key_ids"> & {
  encryption: { mode: "recipients"; key_ids: string[] } | { mode: "digest-only" };
  ciphertext_sha256: string | null;
  tool_server?: string | null;
};

export type ProblemKind = "changed" | "removed" | "inserted" | "checkpoint";
export type Problem = { kind: ProblemKind; record_id: string | null; chain_id: string | null; seq: number | null; ts: string | null; detail: string };

export type VerifyReport = {
  ok: boolean;
  records: number;
  chains: number;
  /** records at or below a signed head */
  covered: number;
  /** chained records after the latest checkpoint */
  uncovered: number;
  /** records written before chaining */
  unchained: number;
  checkpoint: { number: number; at: string; public_key: string } | null;
  problems: Problem[];
};

type Entry = { id: string; ts: string; hash: string; prev: string | null };

export class ChainVerifier {
  private readonly chains = new Map<string, Map<number, Entry[]>>();
  /** Per installation: the earliest time of a chained record. */
  private readonly chainedSince = new Map<string, number>();
  private readonly unchained: { id: string; installation: string; ts: string }[] = [];
  private count = 0;
  /** Records whose fields disagree with their own chained fields (found as they are added). */
  private readonly fieldProblems: Problem[] = [];

  add(r: ExportedRecord): void {
    this.count++;
    if (typeof r.tool_server === "string" && r.tool_server !== toolServerOf(r.tool_name)) {
      this.fieldProblems.push({ kind: "changed", record_id: r.id, chain_id: r.chain_id ?? null, seq: r.chain_seq ?? null, ts: r.ts, detail: `record ${r.id} was changed: its tool_server "${r.tool_server}" is not the server of its tool_name ${JSON.stringify(r.tool_name)}` });
    }
    const input: ChainInput = { ...r, recipient_key_ids: r.encryption.mode === "recipients" ? r.encryption.key_ids : [] };
    const link = chainLink(input);
    if (!link) {
      this.unchained.push({ id: r.id, installation: r.installation_id, ts: r.ts });
      return;
    }
    let chain = this.chains.get(link.chain_id);
    if (!chain) this.chains.set(link.chain_id, (chain = new Map()));
    const at = chain.get(link.chain_seq) ?? [];
    at.push({ id: r.id, ts: r.ts, hash: recordHash(input, r.ciphertext_sha256), prev: link.chain_prev });
    chain.set(link.chain_seq, at);
    const t = Date.parse(r.ts);
    if (t < (this.chainedSince.get(r.installation_id) ?? Infinity)) this.chainedSince.set(r.installation_id, t);
  }

  finish(checkpoints: { public_key: string | null; checkpoints: CheckpointView[] }, pinnedKey?: string): VerifyReport {
    const problems: Problem[] = [...this.fieldProblems];
    const latest = this.checkCheckpoints(checkpoints, pinnedKey, problems);
    let covered = 0;
    let uncovered = 0;
    const headed = new Map((latest?.heads ?? []).map((h) => [h.chain_id, h]));
    // Where retention cut each chain (signed with the heads): walks stop there, nothing may lie below.
    const floors = new Map((latest?.floors ?? []).map((f) => [f.chain_id, f]));
    for (const h of latest?.heads ?? []) covered += this.walkDown(h.chain_id, h.seq, h.hash, floors.get(h.chain_id) ?? null, problems);
    for (const [chainId, chain] of this.chains) {
      const floor = floors.get(chainId) ?? null;
      uncovered += this.walkUp(chainId, chain, Math.max(headed.get(chainId)?.seq ?? 0, floor ? floor.seq - 1 : 0), floor, problems);
      if (!floor) continue;
      for (const [seq, at] of chain) {
        if (seq >= floor.seq) continue;
        for (const e of at) problems.push({ kind: "inserted", record_id: e.id, chain_id: chainId, seq, ts: e.ts, detail: `record ${e.id} claims #${seq} of chain ${chainId}, below #${floor.seq} where retention deleted the chain` });
      }
    }
    for (const u of this.unchained) {
      const since = this.chainedSince.get(u.installation);
      if (since !== undefined && Date.parse(u.ts) >= since) {
        problems.push({ kind: "inserted", record_id: u.id, chain_id: null, seq: null, ts: u.ts, detail: `record ${u.id} carries no chain fields, yet installation ${u.installation} chained its records from ${new Date(since).toISOString()} on` });
      }
    }
    problems.sort((x, y) => (x.ts ?? "").localeCompare(y.ts ?? "") || (x.seq ?? 0) - (y.seq ?? 0));
    return {
      ok: problems.length === 0,
      records: this.count,
      chains: this.chains.size,
      covered,
      uncovered,
      unchained: this.unchained.length,
      checkpoint: latest ? { number: latest.number, at: latest.at, public_key: latest.public_key } : null,
      problems,
    };
  }

  private checkCheckpoints(c: { public_key: string | null; checkpoints: CheckpointView[] }, pinnedKey: string | undefined, problems: Problem[]): CheckpointBody | null {
    const fail = (detail: string) => problems.push({ kind: "checkpoint", record_id: null, chain_id: null, seq: null, ts: null, detail });
    const key = pinnedKey ?? c.public_key;
    if (c.checkpoints.length === 0 || !key) {
      fail("there is no signed checkpoint yet, so nothing can be verified; make one with POST …/audit-checkpoints or wait for the hourly one");
      return null;
    }
    if (pinnedKey && c.public_key && pinnedKey !== c.public_key) fail(`the control plane names the signing key ${c.public_key}, not the pinned ${pinnedKey}`);
    let prev: CheckpointView | null = null;
    let body: CheckpointBody | null = null;
    for (const [i, cp] of c.checkpoints.entries()) {
      if (!checkpointSignatureValid(cp.body, cp.signature, key)) fail(`checkpoint #${cp.number} does not carry a valid signature by ${key}`);
      try {
        body = JSON.parse(cp.body) as CheckpointBody;
      } catch {
        fail(`checkpoint #${cp.number} is not JSON`);
        return null;
      }
      if (body.number !== i + 1 || cp.number !== i + 1) fail(`checkpoint #${cp.number} is in place ${i + 1}: a checkpoint was removed or inserted`);
      if (body.prev !== (prev ? bodyHash(prev.body) : null)) fail(`checkpoint #${cp.number} does not name the hash of checkpoint #${prev?.number ?? 0}`);
      if (body.public_key !== key) fail(`checkpoint #${cp.number} names the key ${body.public_key}, not ${key}`);
      prev = cp;
    }
    return body;
  }

  /** Walks a chain from a signed head down to #1, or to its retention floor; returns how many records it covered. */
  private walkDown(chainId: string, headSeq: number, headHash: string, floor: CheckpointFloor | null, problems: Problem[]): number {
    const chain = this.chains.get(chainId) ?? new Map<number, Entry[]>();
    let expected: string | null = headHash;
    let above: Entry | null = null;
    let covered = 0;
    for (let s = headSeq; s >= (floor?.seq ?? 1); s--) {
      const at = chain.get(s) ?? [];
      if (at.length === 0) {
        const after = above ? `the record before ${above.id}` : `the last record the checkpoint signed`;
        problems.push({ kind: "removed", record_id: null, chain_id: chainId, seq: s, ts: above?.ts ?? null, detail: `record #${s} of chain ${chainId} (${after}) is missing` });
        expected = null;
        continue;
      }
      const match: Entry | undefined = expected === null ? at[0]! : at.find((e) => e.hash === expected);
      if (!match) {
        const e = at[0]!;
        problems.push({ kind: "changed", record_id: e.id, chain_id: chainId, seq: s, ts: e.ts, detail: `record ${e.id} (#${s} of chain ${chainId}) was changed: its hash is not the one ${above ? `record ${above.id} names` : "the checkpoint signed"}` });
      }
      for (const e of at) if (e !== (match ?? at[0])) problems.push({ kind: "inserted", record_id: e.id, chain_id: chainId, seq: s, ts: e.ts, detail: `record ${e.id} claims #${s} of chain ${chainId}, which ${(match ?? at[0])!.id} holds` });
      const chosen: Entry = match ?? at[0]!;
      covered += at.length;
      expected = chosen.prev;
      above = chosen;
    }
    if (floor) {
      // The first record kept must name the last one retention deleted (or, all deleted, the head is it).
      if (expected !== null && expected !== floor.prev) {
        if (above) problems.push({ kind: "changed", record_id: above.id, chain_id: chainId, seq: floor.seq, ts: above.ts, detail: `record ${above.id} (#${floor.seq} of chain ${chainId}, the first kept by retention) was changed: it does not name the last record retention deleted` });
        else problems.push({ kind: "checkpoint", record_id: null, chain_id: chainId, seq: headSeq, ts: null, detail: `chain ${chainId}: the signed head #${headSeq} is not the record retention deleted last` });
      }
    } else if (above && expected !== null) problems.push({ kind: "changed", record_id: above.id, chain_id: chainId, seq: 1, ts: above.ts, detail: `record ${above.id}, the first of chain ${chainId}, names a predecessor` });
    return covered;
  }

  /** Checks the links of the records above `from` (not yet signed); returns how many there are. */
  private walkUp(chainId: string, chain: Map<number, Entry[]>, from: number, floor: CheckpointFloor | null, problems: Problem[]): number {
    const top = Math.max(...chain.keys());
    let below: Entry | null = from > 0 ? (chain.get(from)?.[0] ?? null) : null;
    let n = 0;
    for (let s = from + 1; s <= top; s++) {
      const at = chain.get(s) ?? [];
      if (at.length === 0) {
        problems.push({ kind: "removed", record_id: null, chain_id: chainId, seq: s, ts: below?.ts ?? null, detail: `record #${s} of chain ${chainId} (after ${below?.id ?? "its start"}) is missing` });
        below = null;
        continue;
      }
      const want = s === 1 ? null : floor && s === floor.seq ? floor.prev : below?.hash;
      const match = want === undefined ? at[0]! : at.find((e) => e.prev === want);
      if (!match && below) {
        problems.push({ kind: "changed", record_id: below.id, chain_id: chainId, seq: s - 1, ts: below.ts, detail: `record ${below.id} (#${s - 1} of chain ${chainId}) was changed: its hash is not the one record ${at[0]!.id} names` });
      }
      for (const e of at) if (e !== (match ?? at[0])) problems.push({ kind: "inserted", record_id: e.id, chain_id: chainId, seq: s, ts: e.ts, detail: `record ${e.id} claims #${s} of chain ${chainId}, which ${(match ?? at[0])!.id} holds` });
      n += at.length;
      below = match ?? at[0]!;
    }
    return n;
  }
}
