// Policy conditions: a CEL expression (github.com/google/cel-spec) over the call, run by svc's
// CEL (contract/cel: @bufbuild/cel with fixes, RE2 by re2js, a step meter). This file is the
// contract of the bundle's `condition` field: the control plane checks a condition with
// `checkCondition` when an admin writes it, the proxy compiles it with `compileCondition`
// once per bundle, and `svc policies test` does what the proxy does. All run the same checks,
// so a condition the control plane would refuse (an old control plane's, a hand-made bundle's)
// fails closed in the proxy. Pure: the clock comes in as `now`. docs/conditions.md.
//
// Variables:
//   args   map      the tool call's arguments (JSON; whole numbers are CEL ints, exactly,
//                   up to 64 bits; other numbers doubles)
//   user   object   {id, email, groups: list<string>, attributes: map<string, string>}
//                   (the installation subject: id = installation id, email "", no groups)
//   now    timestamp  the decision time: now.getHours("Europe/Berlin"), now.getDayOfWeek("UTC")
//                   (0 = Sunday), now.getDate(), ...
import { CelScalar, type CelType, mapType, objectType } from "@bufbuild/cel";
import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { checkCel, DYN, listOf, mapOf, prim, showTy, type Ty } from "./cel/check.ts";
import { ESTIMATE_ITEMS, estimateCost } from "./cel/cost.ts";
import { engineEnv, type Expr, type ParsedCel, parseCel, program } from "./cel/engine.ts";
import { patternProblem } from "./cel/regex.ts";
import { argsValue, type ConditionArgs } from "./condition-args.ts";

export { CONDITION_ARGS_MAX_DEPTH, CONDITION_ARGS_MAX_VALUES } from "./condition-args.ts";

export const CONDITION_MAX_LENGTH = 2000;
/** The most steps a condition may cost: its estimate when written, its meter when run (about 1,000 loop iterations, 1–2 ms of a quiet core). */
export const CONDITION_COST_LIMIT = 2000;

const STRING = CelScalar.STRING;
const VARIABLES: Record<string, CelType> = { args: mapType(STRING, CelScalar.DYN), user: mapType(STRING, CelScalar.DYN), now: objectType(TimestampSchema) };
const USER_FIELDS = new Map<string, Ty>([
  ["id", prim("string")],
  ["email", prim("string")],
  ["groups", listOf(prim("string"))],
  ["attributes", mapOf(prim("string"), prim("string"))],
]);
const TYPES = new Map<string, Ty>([
  ["args", mapOf(prim("string"), DYN)],
  ["user", { k: "object", name: "user", fields: USER_FIELDS }],
  ["now", prim("google.protobuf.Timestamp")],
]);
const ENV = engineEnv(VARIABLES);

/** The caller as conditions see it. */
export type ConditionUser = { id: string; email: string; groups: readonly string[]; attributes: Readonly<Record<string, string>> };

export type ConditionContext = { args: unknown; user: ConditionUser; now: Date };

/** Where a problem is: 1-based line and column, and the 0-based offset. */
export type ConditionPosition = { offset: number; line: number; column: number };

/** A condition's estimate over the limit: the cost, the limit and the part that costs most. */
export type CostEstimate = { estimate: number; limit: number; part: string };

/** `refused`: not an error in the condition but a rule of svc's (its cost, a pattern's shape). */
export type ConditionProblem = { message: string; position: ConditionPosition | null; cost?: CostEstimate; refused?: boolean };

function positionAt(expr: string, offset: number): ConditionPosition {
  const before = expr.slice(0, offset).split("\n");
  return { offset, line: before.length, column: before[before.length - 1]!.length + 1 };
}

const at = (expr: string, offset: number | null) => (offset === null ? null : positionAt(expr, Math.min(offset, expr.length)));

/** "line 2, column 5: no such overload: int + string" — the way every surface names a problem. */
export function describeProblem(p: ConditionProblem): string {
  return p.position ? `line ${p.position.line}, column ${p.position.column}: ${p.message}` : p.message;
}

/** Each `matches` pattern: a string literal in RE2 syntax without nested repetition. */
function patternCheck(e: Expr, expr: string, positions: Record<string, number>): ConditionProblem | null {
  const k = e.exprKind;
  const kids: (Expr | undefined)[] = [];
  if (k.case === "callExpr") {
    if (k.value.function === "matches") {
      const p = k.value.args[k.value.args.length - 1];
      const c = p?.exprKind.case === "constExpr" ? p.exprKind.value.constantKind : null;
      const where = at(expr, positions[String((p ?? e).id)] ?? null);
      if (c?.case !== "stringValue")
        return { message: "matches() takes a string literal as its pattern here: a pattern from the call would let the caller choose its cost", position: where, refused: true };
      const why = patternProblem(c.value);
      if (why) return { message: why.message, position: where, ...(why.refused ? { refused: true } : {}) };
    }
    kids.push(k.value.target, ...k.value.args);
  } else if (k.case === "selectExpr") kids.push(k.value.operand);
  else if (k.case === "listExpr") kids.push(...k.value.elements);
  else if (k.case === "structExpr") for (const en of k.value.entries) kids.push(en.keyKind.case === "mapKey" ? en.keyKind.value : undefined, en.value);
  else if (k.case === "comprehensionExpr") kids.push(k.value.iterRange, k.value.accuInit, k.value.loopCondition, k.value.loopStep, k.value.result);
  for (const x of kids) {
    const p = x ? patternCheck(x, expr, positions) : null;
    if (p) return p;
  }
  return null;
}

type Checked = { ok: true; parsed: ParsedCel; readsArgs: boolean } | { ok: false; problem: ConditionProblem };

function check(expr: string): Checked {
  if (expr.trim() === "") return { ok: false, problem: { message: "the condition is empty; leave it out to apply the policy always", position: null } };
  if (expr.length > CONDITION_MAX_LENGTH) return { ok: false, problem: { message: `the condition is longer than ${CONDITION_MAX_LENGTH} characters`, position: null } };
  const parsed = parseCel(expr);
  if (!parsed.ok) return { ok: false, problem: { message: parsed.problem.message, position: at(expr, parsed.problem.offset) } };
  const typed = checkCel(parsed.parsed, TYPES);
  if (!typed.ok) return { ok: false, problem: { message: typed.problem.message, position: at(expr, typed.problem.offset) } };
  const t = typed.type;
  if (t.k !== "dyn" && t.k !== "free" && showTy(t) !== "bool") return { ok: false, problem: { message: `the condition gives ${showTy(t)}, not bool`, position: positionAt(expr, 0) } };
  const positions = (parsed.parsed.sourceInfo?.positions ?? {}) as Record<string, number>;
  const pattern = patternCheck(parsed.parsed.expr, expr, positions);
  if (pattern) return { ok: false, problem: pattern };
  let readsArgs = false;
  const est = estimateCost(parsed.parsed, expr, (name) => (name === "args" ? ((readsArgs = true), "args") : name === "user" ? "small" : null));
  if (est.cost > CONDITION_COST_LIMIT) {
    const cost = { estimate: est.cost, limit: CONDITION_COST_LIMIT, part: est.part.text };
    const message = `the condition may cost ${est.cost} steps, over the limit of ${CONDITION_COST_LIMIT} (for lists of ${ESTIMATE_ITEMS} items in the arguments); most of it is ${est.part.text}`;
    return { ok: false, problem: { message, position: at(expr, est.part.offset), cost, refused: true } };
  }
  return { ok: true, parsed: parsed.parsed, readsArgs };
}

/** Parses, type-checks, checks its patterns and estimates its cost; null when it is good. */
export function checkCondition(expr: string): ConditionProblem | null {
  const r = check(expr);
  return r.ok ? null : r.problem;
}

/** `limit`: refused for its cost (an estimate over the limit, the meter, the size of the arguments), not for an error. */
export type ConditionResult = { ok: true; value: boolean } | { ok: false; error: string; limit?: boolean };
/** The variables of one decision, converted once and shared by every condition it evaluates. */
export type ConditionActivation = { readonly args: ConditionArgs; readonly user: unknown; readonly now: unknown };
export type CompiledCondition = (activation: ConditionActivation) => ConditionResult;

/** The activation of a decision's context (arguments that are not a JSON object are no arguments). */
export function activation(ctx: ConditionContext): ConditionActivation {
  const ms = ctx.now.getTime();
  const u = ctx.user;
  const user = new Map<string, unknown>([
    ["id", u.id],
    ["email", u.email],
    ["groups", [...u.groups]],
    ["attributes", new Map(Object.entries(u.attributes))],
  ]);
  const now = create(TimestampSchema, { seconds: BigInt(Math.floor(ms / 1000)), nanos: (((ms % 1000) + 1000) % 1000) * 1e6 });
  return { args: argsValue(ctx.args), user, now };
}

/**
 * Compiles a condition, on its first use (parsing costs ~0.2 ms: a bundle of thousands of
 * conditions is indexed without parsing them, and a decision pays only for the ones it runs).
 * Never throws: a condition that does not pass checkCondition (a bundle from another control
 * plane, or made by hand) becomes one that always errors, so its policy refuses the call, and
 * so does one that passes its step limit on a real call.
 */
export function compileCondition(expr: string): CompiledCondition {
  let compiled: CompiledCondition | null = null;
  return (a) => (compiled ??= compileNow(expr))(a);
}

function compileNow(expr: string): CompiledCondition {
  const checked = check(expr);
  if (!checked.ok) {
    const limit = checked.problem.refused === true;
    const error = `the condition ${limit ? "is refused" : "does not compile"} (${describeProblem(checked.problem)})`;
    return () => ({ ok: false, error, limit });
  }
  const run = program(ENV, checked.parsed);
  const readsArgs = checked.readsArgs;
  return (a) => {
    if (readsArgs && !a.args.ok) return { ok: false, error: a.args.error, limit: true };
    const r = run({ args: a.args.ok ? a.args.value : new Map(), user: a.user, now: a.now }, CONDITION_COST_LIMIT);
    if (!r.ok) return { ok: false, error: r.error, limit: r.limit };
    if (typeof r.value !== "boolean") return { ok: false, error: `the condition gave ${typeof r.value === "bigint" ? "int" : typeof r.value}, not a bool` };
    return { ok: true, value: r.value };
  };
}
