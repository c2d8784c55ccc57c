// One chain checked as its records stream past (pure): a proxy's chain (audit-chain.ts) or one
// of the control plane's store chains (store-chain.ts). Records come in any order; the walk
// takes them in number order, holding only the ones that came early (for an export in chain
// order, none): memory does not grow with the chain's length. Each record must name the hash
// of the one before (#1 names none); where retention deleted records, a signed gap (or a proxy
// chain's floor) stands in for them; the record at the signed head must hash to what the
// checkpoint signed. Who changed what, when a link breaks between records A and B: if what
// comes after B (the next record, or the signed head) vouches for B, A was changed; if not, B.
// A chain re-linked from a changed record up to its top shows at the first signed head above.

export type Link = { id: string; ts: string | null; seq: number; hash: string; prev: string | null; counts: boolean };
/** Records `from`–`to` deleted by retention: the first named `prev`, the last hashed to `hash`. */
export type Gap = { from: number; to: number; prev: string | null; hash: string };
export type ProblemKind = "changed" | "removed" | "inserted" | "checkpoint";
export type Problem = { kind: ProblemKind; record_id: string | null; chain_id: string | null; seq: number | null; ts: string | null; detail: string };

/** Never a hash: what a signed head says for a record whose hash it does not vouch for. */
const NOT_VOUCHED = "";

/** Records held for later numbers per chain before the first missing one is declared removed. */
export const EARLY_LIMIT = 100_000;

export class ChainWalk {
  /** records at or below the signed head (of those that count) */
  covered = 0;
  /** records above it, or on a chain no checkpoint signed yet */
  uncovered = 0;
  private next = 1;
  /** What record `next` must name; `known` false after a missing record. */
  private before: string | null = null;
  private known = true;
  /** The record at next - 1, when present. */
  private last: Link | null = null;
  /** A broken link whose culprit waits for what comes after `upper`. */
  private pending: { lower: Link; upper: Link } | null = null;
  private readonly early = new Map<number, Link[]>();
  private earlyCount = 0;
  private gapAt = 0;

  constructor(
    readonly chainId: string,
    private readonly signed: { seq: number; hash: string } | null,
    private readonly gaps: readonly Gap[],
    private readonly report: (p: Problem) => void,
  ) {
    this.skipGaps();
  }

  /** Records held for later (arrived before their number's turn). */
  get held(): number {
    return this.earlyCount;
  }

  add(l: Link): void {
    if (l.seq < this.next || this.inGap(l.seq)) {
      const why = this.inGap(l.seq) || this.passedGap(l.seq) ? "which retention deleted" : "a number an earlier record holds";
      this.problem("inserted", l, `record ${l.id} claims #${l.seq} of chain ${this.chainId}, ${why}`);
      return;
    }
    if (l.seq > this.next) {
      const at = this.early.get(l.seq);
      if (at) at.push(l);
      else this.early.set(l.seq, [l]);
      if (++this.earlyCount > EARLY_LIMIT) this.skipMissing();
      return;
    }
    this.take([l]);
    this.drain();
  }

  /** The end of the stream: what never came is missing. */
  finish(): void {
    while (this.earlyCount > 0) this.skipMissing();
    this.settlePending(null);
    if (this.signed && this.next <= this.signed.seq) this.missing(this.next, this.signed.seq, "the checkpoint signed them");
  }

  private drain(): void {
    for (let at = this.early.get(this.next); at; at = this.early.get(this.next)) {
      this.early.delete(this.next);
      this.earlyCount -= at.length;
      this.take(at);
    }
  }

  /** Declares the numbers up to the lowest one held missing, and goes on from there. */
  private skipMissing(): void {
    let low = Infinity;
    for (const seq of this.early.keys()) if (seq < low) low = seq;
    if (low === Infinity) return;
    this.missing(this.next, low - 1, null);
    this.drain();
  }

  private missing(from: number, to: number, signedNote: string | null): void {
    this.settlePending(null);
    let s = from;
    while (s <= to) {
      if (this.skipGaps() && this.next > s) {
        s = this.next;
        continue;
      }
      const gap = this.gaps[this.gapAt];
      const end = gap && gap.from <= to ? gap.from - 1 : to;
      const after = this.last ? `after record ${this.last.id}` : s === 1 ? "the chain's start" : "after a missing record";
      const what = s === end ? `record #${s}` : `records #${s}–#${end}`;
      this.report({
        kind: "removed",
        record_id: null,
        chain_id: this.chainId,
        seq: s,
        ts: this.last?.ts ?? null,
        detail: `${what} of chain ${this.chainId} (${after}${signedNote ? `; ${signedNote}` : ""}) ${s === end ? "is" : "are"} missing`,
      });
      this.next = end + 1;
      this.known = false;
      this.last = null;
      s = end + 1;
      this.skipGaps();
    }
  }

  /** Takes the record(s) at `next`: the one that links, any other is an insertion. */
  private take(candidates: Link[]): void {
    const e = candidates.find((c) => this.known && c.prev === this.before) ?? candidates[0]!;
    for (const c of candidates) if (c !== e) this.problem("inserted", c, `record ${c.id} claims #${c.seq} of chain ${this.chainId}, which ${e.id} holds`);
    if (e.counts) {
      if (this.signed && e.seq <= this.signed.seq) this.covered++;
      else this.uncovered++;
    }
    // What comes after the record of a broken link vouches for it, or not.
    const blamedUpper = this.settlePending(e.prev);
    if (this.known && e.prev !== this.before && !blamedUpper) {
      if (this.last) this.pending = { lower: this.last, upper: e };
      else if (e.seq === 1) this.problem("changed", e, `record ${e.id}, the first of chain ${this.chainId}, was changed: it names a predecessor`);
      else this.problem("changed", e, `record ${e.id} (#${e.seq} of chain ${this.chainId}, the first after records retention deleted) was changed: it does not name the last record deleted`);
    }
    if (this.signed && e.seq === this.signed.seq) {
      const vouched = e.hash === this.signed.hash;
      if (this.pending?.upper === e) this.settlePending(vouched ? e.hash : NOT_VOUCHED);
      else if (!vouched)
        this.problem("changed", e, `record ${e.id} (#${e.seq} of chain ${this.chainId}) was changed: its hash is not the one the checkpoint signed (it, or a record below it that was re-linked)`);
    }
    this.last = e;
    this.before = e.hash;
    this.known = true;
    this.next = e.seq + 1;
    this.skipGaps();
  }

  /**
   * Decides a broken link: `named` is what follows its upper record names for it (null: nothing
   * follows, so either may have changed). Returns true when the upper record is to blame.
   */
  private settlePending(named: string | null): boolean {
    const p = this.pending;
    if (!p) return false;
    this.pending = null;
    if (named !== null && named === p.upper.hash) {
      this.problem("changed", p.lower, `record ${p.lower.id} (#${p.lower.seq} of chain ${this.chainId}) was changed: its hash is not the one record ${p.upper.id} names`);
      return false;
    }
    if (named !== null) {
      this.problem("changed", p.upper, `record ${p.upper.id} (#${p.upper.seq} of chain ${this.chainId}) was changed: it does not name record ${p.lower.id} before it, nor is it what follows it names`);
      return true;
    }
    this.problem("changed", p.lower, `record ${p.lower.id} (#${p.lower.seq} of chain ${this.chainId}) or record ${p.upper.id} after it was changed: the one does not name the other`);
    return false;
  }

  /** Steps over the gaps that start at `next`; true when it moved. */
  private skipGaps(): boolean {
    let moved = false;
    for (let g = this.gaps[this.gapAt]; g && g.from <= this.next; g = this.gaps[++this.gapAt]) {
      if (g.to < this.next) continue;
      const blamedUpper = this.settlePending(this.known ? g.prev : null);
      if (this.known && this.before !== g.prev && !blamedUpper) {
        if (this.last)
          this.problem(
            "changed",
            this.last,
            `record ${this.last.id} (#${this.last.seq} of chain ${this.chainId}) was changed: its hash is not the one retention recorded before the records it deleted`,
          );
        else
          this.report({
            kind: "checkpoint",
            record_id: null,
            chain_id: this.chainId,
            seq: g.from,
            ts: null,
            detail: `chain ${this.chainId}: the signed gap #${g.from}–#${g.to} does not follow the chain's start`,
          });
      }
      this.next = g.to + 1;
      this.before = g.hash;
      this.known = true;
      this.last = null;
      moved = true;
    }
    return moved;
  }

  private inGap(seq: number): boolean {
    for (let i = this.gapAt; i < this.gaps.length; i++) if (this.gaps[i]!.from <= seq && seq <= this.gaps[i]!.to) return true;
    return false;
  }

  private passedGap(seq: number): boolean {
    for (let i = 0; i < this.gapAt; i++) if (this.gaps[i]!.from <= seq && seq <= this.gaps[i]!.to) return true;
    return false;
  }

  private problem(kind: ProblemKind, l: Link, detail: string): void {
    this.report({ kind, record_id: l.id, chain_id: this.chainId, seq: l.seq, ts: l.ts, detail });
  }
}
