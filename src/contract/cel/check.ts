// A type checker for svc's CEL, over the parsed expression (@bufbuild/cel's checker is not
// public and handles no calls). It deduces each node's type from the literals, the declared
// variables and the standard library's overloads (engine.ts libraryOverloads), and reports
// what cannot work whatever the values: an unknown variable, function or field, a call no
// overload takes, an operator on the wrong kind of operand. `dyn` (the call's arguments)
// matches anything, so what depends on the values is left to run time. Pure.
import type { CelFunc, CelType } from "@bufbuild/cel";
import { type Expr, libraryOverloads, type ParsedCel } from "./engine.ts";

/** A type: `free` is a list or map literal's element type not yet known (`[]`), printed as dyn. */
export type Ty =
  | { k: "dyn" | "free" }
  | { k: "prim"; n: string }
  | { k: "list"; e: Ty }
  | { k: "map"; key: Ty; val: Ty }
  | { k: "type" }
  | { k: "object"; name: string; fields: ReadonlyMap<string, Ty> };

export const DYN: Ty = { k: "dyn" };
const FREE: Ty = { k: "free" };
export const prim = (n: string): Ty => ({ k: "prim", n });
export const listOf = (e: Ty): Ty => ({ k: "list", e });
export const mapOf = (key: Ty, val: Ty): Ty => ({ k: "map", key, val });
const BOOL = prim("bool");

export function showTy(t: Ty): string {
  switch (t.k) {
    case "dyn":
    case "free":
      return "dyn";
    case "prim":
      return t.n;
    case "list":
      return `list<${showTy(t.e)}>`;
    case "map":
      return `map<${showTy(t.key)}, ${showTy(t.val)}>`;
    case "type":
      return "type";
    case "object":
      return t.name;
  }
}

/** A library type as a Ty. */
export function tyOf(c: CelType): Ty {
  if (c.kind === "list") return listOf(tyOf(c.element));
  if (c.kind === "map") return mapOf(tyOf(c.key), tyOf(c.value));
  if (c.kind === "object") return prim(c.name);
  if (c.name === "dyn") return DYN;
  if (c.name === "type") return { k: "type" };
  return prim(c.name);
}

const loose = (t: Ty) => t.k === "dyn" || t.k === "free";

/** Whether a value of type `a` may be passed where `p` is expected. */
function fits(a: Ty, p: Ty): boolean {
  if (loose(a) || loose(p)) return true;
  if (p.k === "type") return a.k === "type";
  if (a.k === "list" && p.k === "list") return fits(a.e, p.e);
  if (a.k === "map" && p.k === "map") return fits(a.key, p.key) && fits(a.val, p.val);
  if (a.k === "object" && p.k === "map") return fits(prim("string"), p.key);
  return a.k === "prim" && p.k === "prim" && a.n === p.n;
}

/** The type of a value that is either `a` or `b`. */
export function join(a: Ty, b: Ty): Ty {
  if (a.k === "free") return b;
  if (b.k === "free") return a;
  if (a.k === "list" && b.k === "list") return listOf(join(a.e, b.e));
  if (a.k === "map" && b.k === "map") return mapOf(join(a.key, b.key), join(a.val, b.val));
  return showTy(a) === showTy(b) ? a : DYN;
}

export type CheckProblem = { message: string; offset: number | null };
export class CheckError extends Error {
  constructor(
    message: string,
    readonly offset: number | null,
  ) {
    super(message);
  }
}

const TYPE_NAMES = new Set(["int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn", "google.protobuf.Timestamp", "google.protobuf.Duration"]);
let library: Map<string, CelFunc[]> | null = null;

type Scope = ReadonlyMap<string, Ty>;

class Checker {
  constructor(
    private readonly vars: ReadonlyMap<string, Ty>,
    private readonly container: string,
    private readonly positions: Record<string, number>,
  ) {}

  fail(e: Expr, message: string): never {
    throw new CheckError(message, this.positions[String(e.id)] ?? null);
  }

  /** Where the whole of `e` starts: an operator's position is its symbol, `'a' + 1` starts at `'a'`. */
  start(e: Expr): number | null {
    let min = this.positions[String(e.id)] ?? null;
    const k = e.exprKind;
    const kids = k.case === "callExpr" ? [k.value.target, ...k.value.args] : k.case === "selectExpr" ? [k.value.operand] : [];
    for (const x of kids) {
      const p = x ? this.start(x) : null;
      if (p !== null && (min === null || p < min)) min = p;
    }
    return min;
  }

  /** A declared name as the container resolves it (`a.b` in container `x.y`: x.y.a.b, x.a.b, a.b). */
  resolve(name: string): Ty | undefined {
    const parts = this.container ? this.container.split(".") : [];
    for (let i = parts.length; i >= 0; i--) {
      const t = this.vars.get([...parts.slice(0, i), name].join("."));
      if (t) return t;
    }
    return undefined;
  }

  /** `a.b.c` as written, when every part is a plain name; else null. */
  dotted(e: Expr): string | null {
    const k = e.exprKind;
    if (k.case === "identExpr") return k.value.name;
    if (k.case === "selectExpr" && !k.value.testOnly && k.value.operand) {
      const head = this.dotted(k.value.operand);
      return head === null ? null : `${head}.${k.value.field}`;
    }
    return null;
  }

  type(e: Expr, scope: Scope): Ty {
    const k = e.exprKind;
    switch (k.case) {
      case "constExpr": {
        const c = k.value.constantKind.case;
        return c === "int64Value"
          ? prim("int")
          : c === "uint64Value"
            ? prim("uint")
            : c === "doubleValue"
              ? prim("double")
              : c === "stringValue"
                ? prim("string")
                : c === "bytesValue"
                  ? prim("bytes")
                  : c === "boolValue"
                    ? BOOL
                    : prim("null_type");
      }
      case "identExpr": {
        const name = k.value.name;
        const t = scope.get(name) ?? this.resolve(name);
        if (t) return t;
        if (TYPE_NAMES.has(name)) return { k: "type" };
        return this.fail(e, `unknown variable ${name}`);
      }
      case "selectExpr": {
        const v = k.value;
        const path = this.dotted(e);
        if (path && !scope.has(path.split(".")[0]!)) {
          const t = this.resolve(path);
          if (t) return t;
          if (TYPE_NAMES.has(path)) return { k: "type" };
        }
        const on = this.type(v.operand!, scope);
        const field = this.field(e, on, v.field);
        return v.testOnly ? BOOL : field;
      }
      case "callExpr":
        return this.call(e, scope);
      case "listExpr":
        return listOf(k.value.elements.reduce<Ty>((t, x) => join(t, this.type(x, scope)), FREE));
      case "structExpr": {
        if (k.value.messageName) return this.fail(e, `message types are not available here (${k.value.messageName})`);
        let key: Ty = FREE;
        let val: Ty = FREE;
        const keys = new Set<string>();
        for (const en of k.value.entries) {
          if (en.keyKind.case === "mapKey") {
            // Keys are compared as values: 0, 0u and 0.0 are one key (the spec's heterogeneous equality).
            const c = en.keyKind.value.exprKind.case === "constExpr" ? en.keyKind.value.exprKind.value.constantKind : null;
            const v = c?.value;
            const same = !c ? null : typeof v === "bigint" ? `n${v}` : typeof v === "number" ? `n${Number.isInteger(v) ? BigInt(v) : v}` : `${c.case}:${String(v)}`;
            if (same !== null && keys.has(same)) this.fail(en.keyKind.value, `the map literal has the key ${String(c!.value)} twice`);
            if (same !== null) keys.add(same);
            key = join(key, this.type(en.keyKind.value, scope));
          }
          if (en.value) val = join(val, this.type(en.value, scope));
        }
        return mapOf(key, val);
      }
      case "comprehensionExpr": {
        const c = k.value;
        const range = this.type(c.iterRange!, scope);
        const elem = range.k === "list" ? range.e : range.k === "map" ? range.key : loose(range) ? DYN : this.fail(c.iterRange!, `cannot iterate over ${showTy(range)}`);
        const inner = new Map(scope);
        inner.set(c.iterVar, c.iterVar2 ? (range.k === "list" ? prim("int") : elem) : elem);
        if (c.iterVar2) inner.set(c.iterVar2, range.k === "list" ? range.e : range.k === "map" ? range.val : DYN);
        let accu = this.type(c.accuInit!, scope);
        inner.set(c.accuVar, accu);
        this.type(c.loopCondition!, inner);
        accu = join(accu, this.type(c.loopStep!, inner));
        const after = new Map(scope);
        after.set(c.accuVar, accu);
        return this.type(c.result!, after);
      }
      default:
        return DYN;
    }
  }

  field(e: Expr, on: Ty, name: string): Ty {
    if (loose(on)) return DYN;
    if (on.k === "map") {
      if (!fits(prim("string"), on.key)) this.fail(e, `a map with ${showTy(on.key)} keys has no field ${name}`);
      return on.val;
    }
    if (on.k === "object") return on.fields.get(name) ?? this.fail(e, `${on.name} has no field ${name} (it has ${[...on.fields.keys()].join(", ")})`);
    return this.fail(e, `${showTy(on)} has no fields (selecting ${name})`);
  }

  call(e: Expr, scope: Scope): Ty {
    const c = (e.exprKind as Extract<Expr["exprKind"], { case: "callExpr" }>).value;
    const args = c.args.map((a) => this.type(a, scope));
    const target = c.target ? this.type(c.target, scope) : undefined;
    const fn = c.function;
    const bool = (t: Ty, i: number) => fits(t, BOOL) || this.fail(c.args[i]!, `${fn.replace(/_/g, "")} takes bools, not ${showTy(t)}`);
    switch (fn) {
      case "_&&_":
      case "_||_":
        args.forEach(bool);
        return BOOL;
      case "@not_strictly_false":
        return BOOL;
      case "_?_:_":
        bool(args[0]!, 0);
        return join(args[1]!, args[2]!);
      case "_[_]": {
        const [on, key] = args as [Ty, Ty];
        if (on.k === "list") return fits(key, prim("int")) || fits(key, prim("uint")) ? on.e : this.fail(e, `a list index is an int, not ${showTy(key)}`);
        if (on.k === "map") return fits(key, on.key) || key.k === "prim" ? on.val : this.fail(e, `no ${showTy(key)} key in ${showTy(on)}`);
        if (on.k === "object") return DYN;
        return loose(on) ? DYN : this.fail(e, `${showTy(on)} cannot be indexed`);
      }
      case "_+_":
        if (args[0]!.k === "list" && args[1]!.k === "list") return listOf(join(args[0]!.e, args[1]!.e));
    }
    library ??= libraryOverloads();
    const all = (library.get(fn) ?? []).filter((f) => (f.target !== undefined) === (target !== undefined));
    if (all.length === 0) return this.fail(e, library.has(fn) ? `${fn} is ${target ? "not a method" : "a method"}` : `unknown function ${fn}`);
    const arity = all.filter((f) => f.arguments.length === args.length);
    if (arity.length === 0) return this.fail(e, `${fn} takes ${[...new Set(all.map((f) => f.arguments.length))].join(" or ")} argument(s), not ${args.length}`);
    const match = arity.filter((f) => (!target || fits(target, tyOf(f.target!))) && args.every((a, i) => fits(a, tyOf(f.arguments[i]!))));
    if (match.length === 0) {
      const op = /^_(.+)_$/.exec(fn)?.[1] ?? /^(.)_$/.exec(fn)?.[1];
      const shown =
        op && args.length === 2
          ? `${showTy(args[0]!)} ${op} ${showTy(args[1]!)}`
          : op
            ? `${op}${showTy(args[0]!)}`
            : `${target ? `${showTy(target)}.` : ""}${fn.replace(/^@/, "")}(${args.map(showTy).join(", ")})`;
      throw new CheckError(`no such overload: ${shown}`, this.start(e));
    }
    return match.map((f) => tyOf(f.result)).reduce((a, b) => (showTy(a) === showTy(b) ? a : DYN));
  }
}

/** The deduced type of a parsed expression, or its first problem. */
export function checkCel(parsed: ParsedCel, vars: ReadonlyMap<string, Ty>, container = ""): { ok: true; type: Ty } | { ok: false; problem: CheckProblem } {
  const positions: Record<string, number> = {};
  for (const [id, p] of Object.entries(parsed.sourceInfo?.positions ?? {})) positions[id] = p as number;
  try {
    return { ok: true, type: new Checker(vars, container, positions).type(parsed.expr, new Map()) };
  } catch (e) {
    if (e instanceof CheckError) return { ok: false, problem: { message: e.message, offset: e.offset } };
    throw e;
  }
}
