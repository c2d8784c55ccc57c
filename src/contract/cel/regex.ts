// The rule for regular expressions in conditions: RE2 syntax (re2js compiles it; what RE2
// cannot express, such as backreferences and lookaround, is refused), and no nested
// repetition. svc's engine runs RE2 in linear time whatever the pattern, but a bundle also
// reaches proxies of older releases and other CEL runtimes, whose backtracking engines take
// exponential time on `(a+)+`-shaped patterns: such a pattern is refused when it is written.
// Pure.
import { compileRegex } from "./engine.ts";

/** Why a pattern is refused (`refused`: for its shape, not its syntax), or null. */
export function patternProblem(pattern: string): { message: string; refused: boolean } | null {
  try {
    compileRegex(pattern);
  } catch (e) {
    return { message: `the pattern ${JSON.stringify(pattern)} is not RE2 syntax (${(e as Error).message}); RE2 has no backreferences or lookaround`, refused: false };
  }
  const nested = nestedRepetition(pattern);
  if (nested === null) return null;
  return { message: `the pattern repeats a repetition (${nested}), which backtracking engines (older svc proxies among them) take exponential time on; write it without the nesting`, refused: true };
}

/** The maximum a quantifier at `i` repeats (Infinity for *, + and {n,}), and its length; null when none. */
function quantifier(p: string, i: number): { max: number; length: number } | null {
  const c = p[i];
  if (c === "*" || c === "+") return { max: Infinity, length: 1 + (p[i + 1] === "?" ? 1 : 0) };
  if (c === "?") return { max: 1, length: 1 };
  const m = c === "{" ? /^\{(\d+)(,(\d*))?\}\??/.exec(p.slice(i)) : null;
  if (!m) return null;
  return { max: m[2] === undefined ? Number(m[1]) : m[3] === "" ? Infinity : Number(m[3]), length: m[0].length };
}

/** The first group that repeats (more than once) something unbounded inside it, as written; null when none. */
export function nestedRepetition(p: string): string | null {
  const groups: { start: number; unbounded: boolean }[] = [{ start: 0, unbounded: false }];
  for (let i = 0; i < p.length; i++) {
    const c = p[i]!;
    let atom: { start: number; unbounded: boolean } | null = null;
    if (c === "\\") {
      i++;
      atom = { start: i - 1, unbounded: false };
    } else if (c === "[") {
      let j = i + 1;
      if (p[j] === "^") j++;
      if (p[j] === "]") j++;
      while (j < p.length && p[j] !== "]") j += p[j] === "\\" ? 2 : 1;
      atom = { start: i, unbounded: false };
      i = j;
    } else if (c === "(") {
      groups.push({ start: i, unbounded: false });
      continue;
    } else if (c === ")") {
      atom = groups.length > 1 ? groups.pop()! : { start: i, unbounded: false };
    } else if (c === "|") {
      continue;
    } else {
      atom = { start: i, unbounded: false };
    }
    const q = quantifier(p, i + 1);
    if (q) {
      if (q.max > 1 && atom.unbounded) return p.slice(atom.start, i + 1 + q.length);
      if (q.max === Infinity) groups[groups.length - 1]!.unbounded = true;
      i += q.length;
    }
    if (atom.unbounded) groups[groups.length - 1]!.unbounded = true;
  }
  return null;
}
