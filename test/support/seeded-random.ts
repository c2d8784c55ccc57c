// mulberry32: a seeded generator for property and fuzz tests, so a failure names a
// reproducible seed.
export type SeededRandom = { next(): number; int(n: number): number; pick<T>(xs: readonly T[]): T };

export function seededRandom(seed: number): SeededRandom {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (n: number) => Math.floor(next() * n);
  return { next, int, pick: <T>(xs: readonly T[]): T => xs[int(xs.length)]! };
}
