// The streaming chain check, case by case: in order and out of order; a record changed, removed
// or inserted, each named; a retention gap stepped over; the signed head; and a chain of a
// million records in constant memory (issue 30: `Math.max(...keys)` overflowed the stack at ~750k).
import { describe, expect, test } from "bun:test";
import { ChainWalk, type Gap, type Link, type Problem } from "./chain-walk.ts";

const h = (s: number | string) => `h${s}`;
/** A chain of n records: #s hashes to h<s> and names h<s-1>. */
const chain = (n: number, from = 1): Link[] =>
  Array.from({ length: n }, (_, i) => ({ id: `r${from + i}`, ts: null, seq: from + i, hash: h(from + i), prev: from + i === 1 ? null : h(from + i - 1), counts: true }));

/** Walks `links`; the signed head defaults to the highest number among them. */
function walk(links: Link[], o: { signed?: { seq: number; hash: string } | null; gaps?: Gap[] } = {}) {
  const problems: Problem[] = [];
  const top = links.reduce((m, l) => Math.max(m, l.seq), 0);
  const w = new ChainWalk("c", o.signed === undefined ? { seq: top, hash: h(top) } : o.signed, o.gaps ?? [], (p) => problems.push(p));
  for (const l of links) w.add(l);
  w.finish();
  return { problems, covered: w.covered, uncovered: w.uncovered, kinds: problems.map((p) => [p.kind, p.record_id ?? p.seq]) };
}

describe("ChainWalk", () => {
  test("a whole chain verifies in any order; records above the signed head are uncovered", () => {
    const links = chain(6);
    expect(walk(links).problems).toEqual([]);
    expect(walk([...links].reverse()).problems).toEqual([]);
    expect(walk([links[2]!, links[0]!, links[5]!, links[1]!, links[4]!, links[3]!]).covered).toBe(6);
    const partly = walk(links, { signed: { seq: 4, hash: h(4) } });
    expect(partly).toMatchObject({ problems: [], covered: 4, uncovered: 2 });
    expect(walk(links, { signed: null })).toMatchObject({ problems: [], covered: 0, uncovered: 6 });
  });

  test("a changed record is named: the one whose hash the next record does not name", () => {
    const links = chain(6);
    links[2] = { ...links[2]!, hash: "forged" };
    expect(walk(links).kinds).toEqual([["changed", "r3"]]);
    expect(walk(links).problems[0]!.detail).toBe("record r3 (#3 of chain c) was changed: its hash is not the one record r4 names");
    // the signed head itself, and the first record
    const top = chain(6);
    top[5] = { ...top[5]!, hash: "forged" };
    expect(walk(top).problems[0]!.detail).toContain("record r6 (#6 of chain c) was changed: its hash is not the one the checkpoint signed");
    const first = chain(3);
    first[0] = { ...first[0]!, prev: "x" };
    expect(walk(first).kinds).toEqual([["changed", "r1"]]);
  });

  test("a record whose link field was edited is named, not its neighbour", () => {
    const links = chain(6);
    links[3] = { ...links[3]!, prev: "edited", hash: "h4-edited" };
    expect(walk(links).kinds).toEqual([["changed", "r4"]]);
  });

  test("a chain re-linked from a changed record up is caught at the signed head", () => {
    const links = chain(6).map((l) => (l.seq >= 3 ? { ...l, hash: `${l.hash}'`, prev: l.seq === 3 ? l.prev : `${h(l.seq - 1)}'` } : l));
    expect(walk(links, { signed: { seq: 6, hash: h(6) } }).kinds).toEqual([["changed", "r6"]]);
  });

  test("removed records are named by number, at the end and in the middle; an inserted one by its id", () => {
    const links = chain(8);
    expect(walk(links.filter((l) => l.seq !== 4)).problems.map((p) => p.detail)).toEqual(["record #4 of chain c (after record r3) is missing"]);
    expect(
      walk(
        links.filter((l) => l.seq < 7),
        { signed: { seq: 8, hash: h(8) } },
      ).problems.map((p) => p.detail),
    ).toEqual(["records #7–#8 of chain c (after record r6; the checkpoint signed them) are missing"]);
    const copy = { ...links[4]!, id: "forged", hash: "other" };
    expect(walk([...links.slice(0, 5), copy, ...links.slice(5)]).kinds).toEqual([["inserted", "forged"]]);
    // a copy that arrives before its number's turn (an export out of chain order) is taken first:
    // the break after it still names it, and the original is reported as a second claimant
    expect(walk([copy, ...links]).kinds).toEqual([
      ["inserted", "r5"],
      ["changed", "forged"],
    ]);
  });

  test("a retention gap is stepped over; what lies in it, or before it, is an insertion", () => {
    const links = chain(10);
    const gap: Gap = { from: 1, to: 4, prev: null, hash: h(4) };
    expect(walk(links.slice(4), { gaps: [gap] }).problems).toEqual([]);
    const middle: Gap = { from: 4, to: 6, prev: h(3), hash: h(6) };
    expect(walk([...links.slice(0, 3), ...links.slice(6)], { gaps: [middle] })).toMatchObject({ problems: [], covered: 7 });
    expect(walk(links.slice(3), { gaps: [gap] }).kinds).toEqual([["inserted", "r4"]]);
    // the first record after a gap must name the last one deleted
    const after = links.slice(4);
    after[0] = { ...after[0]!, prev: "wrong" };
    expect(walk(after, { gaps: [gap] }).problems[0]!.detail).toContain("the first after records retention deleted");
  });

  test("a million-record chain in any order within a window, in constant memory and without a spread", () => {
    const n = 1_000_000;
    const problems: Problem[] = [];
    const w = new ChainWalk("big", { seq: n, hash: h(n) }, [], (p) => problems.push(p));
    const before = process.memoryUsage().heapUsed;
    for (let s = 1; s <= n; s += 2) {
      // pairs swapped: #2 before #1, #4 before #3, …
      for (const seq of [s + 1, s]) if (seq <= n) w.add({ id: `r${seq}`, ts: null, seq, hash: h(seq), prev: seq === 1 ? null : h(seq - 1), counts: true });
    }
    w.finish();
    expect(problems).toEqual([]);
    expect(w.covered).toBe(n);
    expect(process.memoryUsage().heapUsed - before).toBeLessThan(64 * 1024 * 1024);
  });
});
