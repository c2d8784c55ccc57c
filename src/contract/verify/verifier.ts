// The check behind `svc audit verify` and the control plane's own verification (pure: export
// lines and a trusted checkpoint in, a report out). Every record is walked in its store chain
// (store-chain.ts: every stored field) and, when its proxy chained it, in its proxy chain
// (audit-chain.ts), per chain, never per installation, so an old and a new proxy replica of
// one installation mix freely. Memory is per chain, not per record: each chain keeps its last
// record and the ones that arrived early (chain-walk.ts).
//   - A record without a store link: awaiting adoption while the signed checkpoint says the
//     backfill of rows stored before the store chains is pending; inserted once it is complete.
//   - A record its proxy did not chain (written before chaining): counted, never a problem.
//   - A decision's outcome and exit code are outside its form; they must be those of its outcome
//     record, which is chained (a decision carrying an outcome no record reports was changed).
//   - A record's tool_server must be the server of its tool_name (issue 13).
import { type CheckpointBody, recordHash, toolServerOf } from "../audit-chain.ts";
import { STORE_CHAINS, chainInputOf, storeDigestOf, storeLinkHash } from "../store-chain.ts";
import { type ExportLine, storedFromLine } from "../stored-line.ts";
import { ChainWalk, type Gap, type Problem } from "./chain-walk.ts";

export type { Problem } from "./chain-walk.ts";

/** Problems kept in the report (all are counted). */
export const MAX_PROBLEMS = 1000;
/** Outcome records remembered for a decision that comes after its outcome in the stream. */
const RECENT_OUTCOMES = 100_000;

export type VerifyState = "verified" | "unsigned" | "tampered";

export type VerifyReport = {
  state: VerifyState;
  ok: boolean;
  records: number;
  /** proxy chains seen */
  chains: number;
  /** records at or below a signed head */
  covered: number;
  /** records chained after the checkpoint, or on chains it does not sign yet */
  uncovered: number;
  /** records in no chain at all (no store link, no proxy chain) while the backfill of older rows is pending */
  awaiting_adoption: number;
  /** records their proxy did not chain (written before chaining): covered by the store chains only */
  unchained: number;
  checkpoint: { number: number; at: string; public_key: string } | null;
  problems_total: number;
  problems: Problem[];
};

type OutcomeFields = { outcome: string | null; exit_code: number | null; installation: string; id: string; ts: string };

const STORE_CHAIN_IDS = new Set<string>(STORE_CHAINS);

export class AuditVerifier {
  private readonly store = new Map<string, ChainWalk>();
  private readonly proxy = new Map<string, ChainWalk>();
  private readonly storeHeads = new Map<string, { seq: number; hash: string }>();
  private readonly proxyHeads = new Map<string, { seq: number; hash: string }>();
  private readonly storeGaps = new Map<string, Gap[]>();
  private readonly floors = new Map<string, Gap[]>();
  private readonly adoptionComplete: boolean;
  private readonly problems: Problem[] = [];
  private problemCount = 0;
  private records = 0;
  private unlinked = 0;
  private unchained = 0;
  /** Decisions carrying an outcome, waiting for their outcome record. */
  private readonly awaitingOutcome = new Map<string, OutcomeFields>();
  /** Outcome records by the decision they complete, for a decision that comes later. */
  private readonly recentOutcomes = new Map<string, OutcomeFields>();

  /**
   * `recall`, when given, is what this verifier saw of a store-chain record on an earlier run
   * (cli/audit/memory.ts): it says whether the record at that place still hashes the same, so a
   * record changed after it was seen is named even if the chain was re-linked above it.
   */
  constructor(
    private readonly checkpoint: CheckpointBody | null,
    private readonly recall?: (chain: string, seq: number, hash: string) => { seenAt: string } | null,
  ) {
    for (const h of checkpoint?.heads ?? []) (STORE_CHAIN_IDS.has(h.chain_id) ? this.storeHeads : this.proxyHeads).set(h.chain_id, { seq: h.seq, hash: h.hash });
    for (const g of checkpoint?.gaps ?? []) {
      const list = this.storeGaps.get(g.chain_id) ?? [];
      list.push({ from: g.from, to: g.to, prev: g.prev, hash: g.hash });
      this.storeGaps.set(g.chain_id, list);
    }
    for (const list of this.storeGaps.values()) list.sort((x, y) => x.from - y.from);
    for (const f of checkpoint?.floors ?? []) this.floors.set(f.chain_id, [{ from: 1, to: f.seq - 1, prev: null, hash: f.prev }]);
    this.adoptionComplete = checkpoint?.adoption === "complete";
  }

  /** Records held in memory right now: early arrivals of every chain, and decisions and outcomes waiting for each other. */
  held(): number {
    let n = this.awaitingOutcome.size + this.recentOutcomes.size;
    for (const w of this.store.values()) n += w.held;
    for (const w of this.proxy.values()) n += w.held;
    return n;
  }

  add(l: ExportLine): void {
    this.records++;
    try {
      this.check(l);
    } catch (e) {
      // A line no form can be computed from (a time beyond any date, a field of the wrong type): changed.
      this.report({
        kind: "changed",
        record_id: typeof l?.id === "string" ? l.id : null,
        chain_id: null,
        seq: null,
        ts: null,
        detail: `record ${String(l?.id)} was changed: its fields cannot be read (${(e as Error).message})`,
      });
    }
  }

  private check(l: ExportLine): void {
    if (typeof l.tool_server === "string" && l.tool_server !== toolServerOf(l.tool_name)) {
      this.report({
        kind: "changed",
        record_id: l.id,
        chain_id: null,
        seq: null,
        ts: l.ts,
        detail: `record ${l.id} was changed: its tool_server "${l.tool_server}" is not the server of its tool_name ${JSON.stringify(l.tool_name)}`,
      });
    }
    // The proxy's form hash, once: its chain's link, and the first part of the store chain's form.
    const stored = storedFromLine(l);
    const proxyHash = recordHash(chainInputOf(stored), stored.ciphertext_sha256);
    const linked = this.addStoreLink(l, storeDigestOf(proxyHash, stored));
    if (typeof stored.chain_id === "string" && typeof stored.chain_seq === "number") {
      this.walk(this.proxy, this.proxyHeads, this.floors, stored.chain_id).add({ id: l.id, ts: l.ts, seq: stored.chain_seq, hash: proxyHash, prev: stored.chain_prev, counts: !linked });
    } else {
      this.unchained++;
      // Covered by no chain at all: a row stored before the store chains, still to be adopted.
      if (!linked) this.unlinked++;
    }
    this.checkOutcome(l);
  }

  /** Walks the record in its store chain; false when it has no store link. */
  private addStoreLink(l: ExportLine, digest: string): boolean {
    const s = l.store;
    if (!s) {
      if (this.adoptionComplete)
        this.report({
          kind: "inserted",
          record_id: l.id,
          chain_id: null,
          seq: null,
          ts: l.ts,
          detail: `record ${l.id} is in no store chain, yet every record stored is chained: it was written into the database directly`,
        });
      return false;
    }
    if (!STORE_CHAIN_IDS.has(s.chain)) {
      // A chain no control plane keeps: someone made it up so that a row of theirs looks chained.
      this.report({
        kind: "inserted",
        record_id: l.id,
        chain_id: s.chain,
        seq: null,
        ts: l.ts,
        detail: `record ${l.id} names store chain "${s.chain}", which the control plane does not keep: it was written into the database directly`,
      });
      return true;
    }
    if (typeof s.seq !== "number" || !Number.isInteger(s.seq) || s.seq < 1) {
      this.report({ kind: "changed", record_id: l.id, chain_id: s.chain, seq: null, ts: l.ts, detail: `record ${l.id} was changed: its place in store chain ${s.chain} is not a number` });
      return true;
    }
    const hash = storeLinkHash({ chain: s.chain, seq: s.seq, prev: s.prev }, digest);
    const differs = this.recall?.(s.chain, s.seq, hash);
    if (differs)
      this.report({
        kind: "changed",
        record_id: l.id,
        chain_id: s.chain,
        seq: s.seq,
        ts: l.ts,
        detail: `record ${l.id} (#${s.seq} of chain ${s.chain}) was changed: it is not what this verifier saw there in ${differs.seenAt}`,
      });
    this.walk(this.store, this.storeHeads, this.storeGaps, s.chain).add({ id: l.id, ts: l.ts, seq: s.seq, hash, prev: s.prev, counts: true });
    return true;
  }

  private walk(walks: Map<string, ChainWalk>, heads: Map<string, { seq: number; hash: string }>, gaps: Map<string, Gap[]>, chainId: string): ChainWalk {
    let w = walks.get(chainId);
    if (!w) walks.set(chainId, (w = new ChainWalk(chainId, heads.get(chainId) ?? null, gaps.get(chainId) ?? [], (p) => this.report(p))));
    return w;
  }

  private checkOutcome(l: ExportLine): void {
    const f: OutcomeFields = { outcome: l.outcome ?? null, exit_code: l.exit_code ?? null, installation: l.installation_id, id: l.id, ts: l.ts };
    if (l.kind === "outcome") {
      if (!l.ref) return;
      const decision = this.awaitingOutcome.get(l.ref);
      if (decision) {
        this.awaitingOutcome.delete(l.ref);
        this.compareOutcome(decision, f);
        return;
      }
      this.recentOutcomes.set(l.ref, f);
      if (this.recentOutcomes.size > RECENT_OUTCOMES) this.recentOutcomes.delete(this.recentOutcomes.keys().next().value!);
      return;
    }
    if (f.outcome === null && f.exit_code === null) return;
    const outcome = this.recentOutcomes.get(l.id);
    if (outcome) this.compareOutcome(f, outcome);
    else this.awaitingOutcome.set(l.id, f);
  }

  private compareOutcome(decision: OutcomeFields, outcome: OutcomeFields): void {
    if (decision.outcome === outcome.outcome && decision.exit_code === outcome.exit_code && decision.installation === outcome.installation) return;
    this.report({
      kind: "changed",
      record_id: decision.id,
      chain_id: null,
      seq: null,
      ts: decision.ts,
      detail: `record ${decision.id} was changed: its outcome (${decision.outcome}, exit code ${decision.exit_code}) is not the one its outcome record ${outcome.id} reports (${outcome.outcome}, exit code ${outcome.exit_code})`,
    });
  }

  private report(p: Problem): void {
    this.problemCount++;
    if (this.problems.length < MAX_PROBLEMS) this.problems.push(p);
  }

  finish(): VerifyReport {
    for (const w of this.store.values()) w.finish();
    for (const w of this.proxy.values()) w.finish();
    // Chains the checkpoint signed that no record of the export belongs to: all removed.
    for (const [chain, head] of this.storeHeads) if (!this.store.has(chain) && head.seq > 0) this.walk(this.store, this.storeHeads, this.storeGaps, chain).finish();
    for (const chain of this.proxyHeads.keys()) if (!this.proxy.has(chain)) this.walk(this.proxy, this.proxyHeads, this.floors, chain).finish();
    for (const d of this.awaitingOutcome.values()) {
      this.report({
        kind: "changed",
        record_id: d.id,
        chain_id: null,
        seq: null,
        ts: d.ts,
        detail: `record ${d.id} was changed: it carries an outcome (${d.outcome}, exit code ${d.exit_code}) that no outcome record reports`,
      });
    }
    let covered = 0;
    let uncovered = 0;
    for (const w of [...this.store.values(), ...this.proxy.values()]) {
      covered += w.covered;
      uncovered += w.uncovered;
    }
    const awaiting = this.adoptionComplete ? 0 : this.unlinked;
    this.problems.sort((x, y) => (x.ts ?? "").localeCompare(y.ts ?? "") || (x.seq ?? 0) - (y.seq ?? 0));
    const state: VerifyState = this.problemCount > 0 ? "tampered" : uncovered > 0 || awaiting > 0 ? "unsigned" : "verified";
    const cp = this.checkpoint;
    return {
      state,
      ok: state !== "tampered",
      records: this.records,
      chains: this.proxy.size,
      covered,
      uncovered,
      awaiting_adoption: awaiting,
      unchained: this.unchained,
      checkpoint: cp ? { number: cp.number, at: cp.at, public_key: cp.public_key } : null,
      problems_total: this.problemCount,
      problems: this.problems,
    };
  }
}
