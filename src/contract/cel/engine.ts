// svc's CEL engine: @bufbuild/cel's parser, planner and standard library (chosen by running
// cel-spec's conformance suite against the candidates: docs/conditions.md), with
//   - regular expressions by re2js: RE2 semantics, linear in the text, each pattern compiled once;
//   - a meter: every standard function call and every comprehension iteration costs steps,
//     by the size of what it works on, paid before the work. Past the limit nothing works any
//     more (functions and loops fail without working) and the result is thrown away, so an
//     evaluation stops at its limit whatever its arguments;
//   - fixes to the library, each with its conformance case: timestamp(int) counts seconds
//     (the library reads milliseconds) within the timestamp range; a comprehension variable
//     shadows a qualified name (`[0].exists(y, y == 0)` in container com.example with a
//     variable com.example.y); time-zone accessors that do not depend on the machine's zone
//     (time-zones.ts).
// Pure: the meter lives for one synchronous evaluation.
import { type CelEnv, type CelFunc, CelScalar, type CelType, type CelValue, celEnv, celError, celFunc, celMethod, isCelError, isCelList, isCelMap, objectType, parse, plan } from "@bufbuild/cel";
import { create } from "@bufbuild/protobuf";
import { TimestampSchema } from "@bufbuild/protobuf/wkt";
import { RE2JS } from "re2js";
import { TIME_ZONE_ACCESSORS } from "./time-zones.ts";

export type ParsedCel = ReturnType<typeof parse>;
export type Expr = ParsedCel["expr"];

/** The meter's function around each comprehension's range; `@` keeps it out of reach of expressions. */
const RANGE = "@svc.range";
/** No value an evaluation makes may be longer than this (bytes, characters or elements). */
export const MAX_VALUE_SIZE = 1 << 20;

type Meter = { used: number; limit: number; exceeded: string | null };
let meter: Meter | null = null;

function charge(n: number, why = "cost"): void {
  if (!meter) return;
  if (meter.exceeded) throw celError(meter.exceeded);
  meter.used += n;
  if (meter.used > meter.limit) {
    meter.exceeded = `the evaluation passed its limit of ${meter.limit} steps (${why})`;
    throw celError(meter.exceeded);
  }
}

export function sizeOf(v: unknown): number {
  if (typeof v === "string" || v instanceof Uint8Array) return v.length;
  if (isCelList(v) || isCelMap(v)) return v.size;
  return 0;
}

/** Steps of one call given operands of `text` characters (or bytes) and `elements` list or map entries in all. */
export function chargeFor(name: string, text: number, elements: number): number {
  // 1, plus 1 per KiB of text; a regular expression 1 per 64 characters; the functions that
  // walk a list or map (equality, membership) 1 per 16 elements; list concatenation is lazy.
  return 1 + (name === "matches" ? text >> 6 : text >> 10) + (WALKS_ELEMENTS.has(name) ? elements >> 4 : 0);
}

const WALKS_ELEMENTS = new Set(["_==_", "_!=_", "@in"]);

function callCost(name: string, operands: readonly unknown[]): number {
  let text = 0;
  let elements = 0;
  for (const v of operands) {
    if (typeof v === "string" || v instanceof Uint8Array) text += v.length;
    else elements += sizeOf(v);
  }
  return chargeFor(name, text, elements);
}

const regexCache = new Map<string, RE2JS>();

/** A pattern compiled by re2js (RE2 syntax); throws re2js's syntax error. */
export function compileRegex(pattern: string): RE2JS {
  let re = regexCache.get(pattern);
  if (!re) {
    re = RE2JS.compile(pattern);
    if (regexCache.size >= 1000) regexCache.clear();
    regexCache.set(pattern, re);
  }
  return re;
}

const { BOOL, STRING, INT } = CelScalar;
const TIMESTAMP = objectType(TimestampSchema);
const MIN_SECONDS = -62135596800n; // 0001-01-01T00:00:00Z
const MAX_SECONDS = 253402300799n; // 9999-12-31T23:59:59Z

function regexMatch(text: string, pattern: string): boolean {
  let re: RE2JS;
  try {
    re = compileRegex(pattern);
  } catch (e) {
    throw celError(`invalid regular expression ${JSON.stringify(pattern.slice(0, 80))}: ${(e as Error).message}`);
  }
  return re.test(text);
}

/** Replacements of the library's own overloads (same id), and what it lacks. */
const FIXES: CelFunc[] = [
  celFunc("timestamp", [INT], TIMESTAMP, (s) => {
    if (s < MIN_SECONDS || s > MAX_SECONDS) throw celError(`timestamp(${s}) is out of the timestamp range (years 1 to 9999)`);
    return create(TimestampSchema, { seconds: s, nanos: 0 });
  }),
  celMethod("matches", STRING, [STRING], BOOL, function (pattern) {
    return regexMatch(this, pattern);
  }),
  celFunc("matches", [STRING, STRING], BOOL, (text, pattern) => regexMatch(text, pattern)),
  ...TIME_ZONE_ACCESSORS,
];

/** A standard function with the meter in front: it costs its steps before it works. */
function metered(f: CelFunc): CelFunc {
  const work = (target: CelValue | undefined, args: CelValue[]) => {
    charge(callCost(f.name, target === undefined ? args : [target, ...args]), f.name);
    const r = f.call(0, target, args);
    if (r === undefined) throw celError(`no matching overload for ${f.name}`);
    if (isCelError(r)) throw r;
    if (sizeOf(r) > MAX_VALUE_SIZE) {
      if (meter) meter.exceeded = `a value grew past ${MAX_VALUE_SIZE} (${f.name})`;
      throw celError(`a value grew past ${MAX_VALUE_SIZE} (${f.name})`);
    }
    return r as never;
  };
  return f.target
    ? celMethod(f.name, f.target, f.arguments, f.result, function (this: CelValue, ...args: CelValue[]) {
        return work(this, args);
      } as never)
    : celFunc(f.name, f.arguments, f.result, ((...args: CelValue[]) => work(undefined, args)) as never);
}

// A loop pays for all its iterations before the first: as many steps as its range has items
// (whether or not it ends early), so its cost depends on sizes only, and a loop past the limit
// does not start. Nested loops pay again on each outer iteration.
const RANGE_FUNC = celFunc(RANGE, [CelScalar.DYN], CelScalar.DYN, (range) => {
  charge(Math.max(1, sizeOf(range)), "loop iterations");
  return range as never;
});

const LIBRARY: CelFunc[] = (() => {
  const byId = new Map<string, CelFunc>();
  for (const f of celEnv({}).funcs) byId.set(f.id, f);
  for (const f of FIXES) byId.set(f.id, f);
  return [...[...byId.values()].map(metered), RANGE_FUNC];
})();

/** The standard functions' overloads as svc runs them (for the checker): name → overloads. */
export function libraryOverloads(): Map<string, CelFunc[]> {
  const m = new Map<string, CelFunc[]>();
  for (const f of LIBRARY) if (f.name !== RANGE) m.set(f.name, [...(m.get(f.name) ?? []), f]);
  return m;
}

export type EngineEnv = { env: CelEnv; variables: Record<string, CelType>; container: string };

export function engineEnv(variables: Record<string, CelType>, container = ""): EngineEnv {
  return { env: celEnv({ namespace: container, variables, funcs: LIBRARY }), variables, container };
}

let nextId = 1n << 40n;
const call = (fn: string, args: Expr[]): Expr => ({ ...args[0]!, id: nextId++, exprKind: { case: "callExpr", value: { $typeName: "cel.expr.Expr.Call", function: fn, args } } }) as Expr;

/** Renames free uses of identifier `from` to `to` (not inside a comprehension that rebinds it). */
function rename(e: Expr, from: string, to: string): void {
  const k = e.exprKind;
  switch (k.case) {
    case "identExpr":
      if (k.value.name === from) k.value.name = to;
      return;
    case "selectExpr":
      if (k.value.operand) rename(k.value.operand, from, to);
      return;
    case "callExpr":
      if (k.value.target) rename(k.value.target, from, to);
      for (const a of k.value.args) rename(a, from, to);
      return;
    case "listExpr":
      for (const a of k.value.elements) rename(a, from, to);
      return;
    case "structExpr":
      for (const en of k.value.entries) {
        if (en.keyKind.case === "mapKey") rename(en.keyKind.value, from, to);
        if (en.value) rename(en.value, from, to);
      }
      return;
    case "comprehensionExpr": {
      const c = k.value;
      for (const x of [c.iterRange, c.accuInit]) if (x) rename(x, from, to);
      const rebound = c.iterVar === from || c.iterVar2 === from || c.accuVar === from;
      if (!rebound)
        for (const x of [c.loopCondition, c.loopStep, c.result])
          if (x) rename(x, from, to);
          else if (c.accuVar !== from && c.result) rename(c.result, from, to);
      return;
    }
    default:
      return;
  }
}

/** The expression as svc runs it: every loop's range goes through the meter; loop variables renamed apart. */
export function instrument(e: Expr): Expr {
  const k = e.exprKind;
  switch (k.case) {
    case "selectExpr":
      if (k.value.operand) instrument(k.value.operand);
      break;
    case "callExpr":
      if (k.value.target) instrument(k.value.target);
      k.value.args.forEach(instrument);
      break;
    case "listExpr":
      k.value.elements.forEach(instrument);
      break;
    case "structExpr":
      for (const en of k.value.entries) {
        if (en.keyKind.case === "mapKey") instrument(en.keyKind.value);
        if (en.value) instrument(en.value);
      }
      break;
    case "comprehensionExpr": {
      const c = k.value;
      for (const x of [c.iterRange, c.accuInit, c.loopCondition, c.loopStep, c.result]) if (x) instrument(x);
      if (c.iterVar && !c.iterVar.startsWith("@")) {
        const fresh = `${c.iterVar}@${nextId++}`;
        for (const x of [c.loopCondition, c.loopStep]) if (x) rename(x, c.iterVar, fresh);
        c.iterVar = fresh;
      }
      if (c.iterRange) c.iterRange = call(RANGE, [c.iterRange]);
      break;
    }
    default:
      break;
  }
  return e;
}

export type RunResult = { ok: true; value: CelValue } | { ok: false; error: string; limit: boolean };
export type Program = (vars: Record<string, unknown>, limit: number) => RunResult;

/** Plans a parsed expression (instrumented on a copy) in the environment. */
export function program(e: EngineEnv, parsed: ParsedCel): Program {
  const run = plan(e.env, instrument(structuredClone(parsed.expr)));
  return (vars, limit) => {
    const m: Meter = { used: 0, limit, exceeded: null };
    meter = m;
    let r: ReturnType<typeof run>;
    try {
      r = run(vars as never);
    } finally {
      meter = null;
    }
    if (m.exceeded) return { ok: false, error: m.exceeded, limit: true };
    if (isCelError(r)) return { ok: false, error: r.message, limit: false };
    return { ok: true, value: r };
  };
}

export type ParseProblem = { message: string; offset: number | null };

/** Parses; a syntax error names its position (the library writes `<input>:line:column: …`). */
export function parseCel(expr: string): { ok: true; parsed: ParsedCel } | { ok: false; problem: ParseProblem } {
  try {
    return { ok: true, parsed: parse(expr) };
  } catch (e) {
    const m = /^<input>:(\d+):(\d+): (.*)$/s.exec((e as Error).message ?? "");
    if (!m) return { ok: false, problem: { message: String((e as Error).message ?? e), offset: null } };
    const lines = expr.split("\n");
    const line = Math.min(Number(m[1]), lines.length);
    const offset = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0) + Number(m[2]) - 1;
    return { ok: false, problem: { message: m[3]!.split("\n")[0]!, offset } };
  }
}
