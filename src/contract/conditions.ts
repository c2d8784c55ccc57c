// Policy conditions: a CEL expression (github.com/google/cel-spec) over the call, evaluated by
// @marcbachmann/cel-js. This file is the contract of the bundle's `condition` field: the control
// plane checks a condition with `checkCondition` when an admin writes it, the proxy compiles it
// with `compileCondition` once per bundle. Both use the one environment below, so what the
// control plane accepts is exactly what the proxy runs. Pure: the clock comes in as `now`.
//
// Variables:
//   args   map      the tool call's arguments (JSON; whole numbers are CEL ints, others doubles)
//   user   object   {id, email, groups: list<string>, attributes: map<string, string>}
//                   (the installation subject: id = installation id, email "", no groups)
//   now    timestamp  the decision time: now.getHours("Europe/Berlin"), now.getDayOfWeek("UTC")
//                   (0 = Sunday), now.getDate(), ...
import { Environment } from "@marcbachmann/cel-js";

export const CONDITION_MAX_LENGTH = 2000;

const env = new Environment({ limits: { maxAstNodes: 500, maxDepth: 50, maxListElements: 200, maxMapEntries: 200, maxCallArguments: 16 } })
  .registerVariable("args", "map<string, dyn>", { description: "the tool call's arguments" })
  .registerVariable({
    name: "user",
    description: "the caller: service user id, email, directory groups and attributes",
    schema: { id: "string", email: "string", groups: "list<string>", attributes: "map<string, string>" },
  })
  .registerVariable("now", "google.protobuf.Timestamp", { description: "the time of the decision" });

/** The caller as conditions see it. */
export type ConditionUser = { id: string; email: string; groups: readonly string[]; attributes: Readonly<Record<string, string>> };

export type ConditionContext = { args: unknown; user: ConditionUser; now: Date };

/** Where a problem is: 1-based line and column, and the 0-based offset. */
export type ConditionPosition = { offset: number; line: number; column: number };

export type ConditionProblem = { message: string; position: ConditionPosition | null };

type CelLikeError = { message?: unknown; node?: { pos?: unknown } };

function positionAt(expr: string, offset: number): ConditionPosition {
  const before = expr.slice(0, offset).split("\n");
  return { offset, line: before.length, column: before[before.length - 1]!.length + 1 };
}

/** The first line of a cel-js message (the rest is a code frame that would repeat the expression). */
function firstLine(e: unknown): string {
  const m = (e as CelLikeError)?.message;
  return typeof m === "string" ? m.split("\n")[0]!.trim() : String(e);
}

function problemOf(expr: string, e: unknown): ConditionProblem {
  const pos = (e as CelLikeError)?.node?.pos;
  return { message: firstLine(e), position: typeof pos === "number" ? positionAt(expr, Math.min(pos, expr.length)) : null };
}

/** "line 2, column 5: no such overload: int + string" — the way every surface names a problem. */
export function describeProblem(p: ConditionProblem): string {
  return p.position ? `line ${p.position.line}, column ${p.position.column}: ${p.message}` : p.message;
}

/** Parses and type-checks a condition; it must be a bool (or dyn, checked at run time). Null when it is good. */
export function checkCondition(expr: string): ConditionProblem | null {
  if (expr.trim() === "") return { message: "the condition is empty; leave it out to apply the policy always", position: null };
  if (expr.length > CONDITION_MAX_LENGTH) return { message: `the condition is longer than ${CONDITION_MAX_LENGTH} characters`, position: null };
  let result: { valid: boolean; type?: unknown; error?: unknown };
  try {
    result = env.check(expr);
  } catch (e) {
    return problemOf(expr, e);
  }
  if (!result.valid) return problemOf(expr, result.error);
  const type = String(result.type);
  if (type !== "bool" && type !== "dyn") return { message: `the condition gives ${type}, not bool`, position: positionAt(expr, 0) };
  return null;
}

export type ConditionResult = { ok: true; value: boolean } | { ok: false; error: string };
/** The variables of one decision, converted once and shared by every condition it evaluates. */
export type ConditionActivation = { readonly args: unknown; readonly user: unknown; readonly now: Date };
export type CompiledCondition = (activation: ConditionActivation) => ConditionResult;

/** JSON whole numbers become CEL ints (as Kubernetes' CEL does); bigints (exact 64-bit) stay ints. */
function celValue(v: unknown): unknown {
  if (typeof v === "number") return Number.isSafeInteger(v) ? BigInt(v) : v;
  if (Array.isArray(v)) return v.map(celValue);
  if (v !== null && typeof v === "object") {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = celValue(x);
    return out;
  }
  return v;
}

const zoneFormats = new Map<string, Intl.DateTimeFormat>();
const LOCAL_PARTS = { year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric" } as const;

/**
 * The decision time as CEL sees it. cel-js turns `now.getHours('Europe/Berlin')` into
 * `toLocaleString('en-US', {timeZone})`, which builds a new formatter on every call (~80 µs in
 * Bun, 50 times a whole decision); this Date keeps one formatter per zone, giving the same text.
 * (An own method, not a subclass: cel-js accepts only plain Dates.)
 */
function decisionTime(ms: number): Date {
  const d = new Date(ms);
  const plain = Date.prototype.toLocaleString;
  d.toLocaleString = function (locales?: Intl.LocalesArgument, options?: Intl.DateTimeFormatOptions): string {
    const zone = options?.timeZone;
    if (locales !== "en-US" || !zone || Object.keys(options).length !== 1) return plain.call(this, locales, options);
    let f = zoneFormats.get(zone);
    if (!f) {
      f = new Intl.DateTimeFormat("en-US", { timeZone: zone, ...LOCAL_PARTS });
      if (zoneFormats.size < 1000) zoneFormats.set(zone, f);
    }
    return f.format(this);
  };
  return d;
}

/** The activation of a decision's context (arguments that are not a JSON object are no arguments). */
export function activation(ctx: ConditionContext): ConditionActivation {
  const args = ctx.args !== null && typeof ctx.args === "object" && !Array.isArray(ctx.args) ? celValue(ctx.args) : {};
  return { args, user: { ...ctx.user, groups: [...ctx.user.groups] }, now: decisionTime(ctx.now.getTime()) };
}

/**
 * Compiles a condition once. Never throws: a condition that does not compile (a bundle from a
 * newer control plane, say) becomes one that always errors, so its policy refuses the call.
 */
export function compileCondition(expr: string): CompiledCondition {
  const problem = checkCondition(expr);
  if (problem) {
    const error = `the condition does not compile (${describeProblem(problem)})`;
    return () => ({ ok: false, error });
  }
  const run = env.parse(expr);
  return (a) => {
    try {
      const value = run(a);
      if (typeof value !== "boolean") return { ok: false, error: `the condition gave ${typeof value}, not a bool` };
      return { ok: true, value };
    } catch (e) {
      return { ok: false, error: firstLine(e) };
    }
  };
}
