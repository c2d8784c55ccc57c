// A call's arguments as conditions see them. JSON numbers keep their exact value: a whole
// number within 64 bits is a CEL int, exactly, whether it came as a double (2) or as the
// proxy's exact-JSON number (9007199254740993, contract/exact-json.ts); any other number is a
// double, the nearest one (100.00000000000000000001 is 100.0, as JSON.parse reads it). So
// `svc policies test` and the proxy, which both parse with parseExactJson, agree.
// The walk is bounded: a condition reads at most CONDITION_ARGS_MAX_VALUES values nested
// CONDITION_ARGS_MAX_DEPTH deep; past either the arguments are refused, naming the bound, and
// a condition that reads `args` errors (its policy refuses the call). Pure.
import { JsonNumber } from "./exact-json.ts";

export const CONDITION_ARGS_MAX_VALUES = 10_000;
export const CONDITION_ARGS_MAX_DEPTH = 32;

const MIN_INT = -(2n ** 63n);
const MAX_INT = 2n ** 63n - 1n;

export type ConditionArgs = { ok: true; value: Map<string, unknown> } | { ok: false; error: string };

class TooLarge extends Error {}

/** A JSON number (double, exact JsonNumber or bigint) as CEL: int when whole and within 64 bits, else double. */
export function celNumber(v: number | bigint | JsonNumber): bigint | number {
  if (typeof v === "bigint") return v >= MIN_INT && v <= MAX_INT ? v : Number(v);
  if (typeof v === "number") return Number.isInteger(v) && v >= -(2 ** 63) && v < 2 ** 63 ? BigInt(v) : v;
  if (/^-?\d+$/.test(v.text)) {
    const n = BigInt(v.text);
    if (n >= MIN_INT && n <= MAX_INT) return n;
  }
  return Number(v.text);
}

function convert(v: unknown, depth: number, count: { n: number }): unknown {
  if (++count.n > CONDITION_ARGS_MAX_VALUES) throw new TooLarge(`the call's arguments hold more than ${CONDITION_ARGS_MAX_VALUES} values, the most a condition reads`);
  if (typeof v === "number" || typeof v === "bigint" || v instanceof JsonNumber) return celNumber(v);
  if (v === null || typeof v !== "object") return v;
  if (depth >= CONDITION_ARGS_MAX_DEPTH) throw new TooLarge(`the call's arguments nest deeper than ${CONDITION_ARGS_MAX_DEPTH} levels, the most a condition reads`);
  if (Array.isArray(v)) return v.map((x) => convert(x, depth + 1, count));
  const m = new Map<string, unknown>();
  for (const [k, x] of Object.entries(v)) m.set(k, convert(x, depth + 1, count));
  return m;
}

/** The arguments (a JSON object; anything else is no arguments) converted for CEL, or why not. */
export function argsValue(args: unknown): ConditionArgs {
  if (args === null || typeof args !== "object" || Array.isArray(args) || args instanceof JsonNumber) return { ok: true, value: new Map() };
  try {
    return { ok: true, value: convert(args, 0, { n: 0 }) as Map<string, unknown> };
  } catch (e) {
    if (e instanceof TooLarge) return { ok: false, error: e.message };
    throw e;
  }
}
