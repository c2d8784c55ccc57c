// The cost estimate of an expression, in the meter's steps (engine.ts: 1 per call and per
// loop iteration, more by the size of what a call works on), for arguments of an assumed
// size: every list or map in them ESTIMATE_ITEMS long, every string ESTIMATE_TEXT long (a large
// call, not the largest: the meter enforces the limit on the real one). Loops multiply:
// `args.l.all(x, args.l.all(y, …))` costs ESTIMATE_ITEMS² iterations.
// Pure.
import { chargeFor, type Expr, type ParsedCel } from "./engine.ts";

export const ESTIMATE_ITEMS = 500;
export const ESTIMATE_TEXT = 1024;

/** What a value may hold: elements (iterations over it), characters, and the shape of each element. */
type Shape = { items: number; text: number; elem: Shape | null };
const SCALAR: Shape = { items: 0, text: 0, elem: null };
/** A value from the call's arguments: anything of the assumed size, nested as deep as it likes. */
const ARG: Shape = { items: ESTIMATE_ITEMS, text: ESTIMATE_TEXT, elem: null };
ARG.elem = ARG;

const joinShape = (a: Shape, b: Shape): Shape =>
  a === b ? a : { items: Math.max(a.items, b.items), text: Math.max(a.text, b.text), elem: a.elem && b.elem ? joinShape(a.elem, b.elem) : (a.elem ?? b.elem) };

type Node = { e: Expr; cost: number; kids: Node[]; loop: boolean };
type Est = { shape: Shape; node: Node };

/** Variables' shapes: the call's arguments are ARG; others (the user, the time) small. */
export type ShapeOf = (name: string) => "args" | "small" | null;

class Estimator {
  constructor(private readonly shapeOf: ShapeOf) {}

  est(e: Expr, scope: ReadonlyMap<string, Shape>): Est {
    const k = e.exprKind;
    const node: Node = { e, cost: 0, kids: [], loop: false };
    const sub = (x: Expr | undefined, s = scope) => {
      if (!x) return SCALAR;
      const r = this.est(x, s);
      node.kids.push(r.node);
      node.cost += r.node.cost;
      return r.shape;
    };
    let shape = SCALAR;
    switch (k.case) {
      case "constExpr": {
        const c = k.value.constantKind;
        if (c.case === "stringValue" || c.case === "bytesValue") shape = { items: 0, text: c.value.length, elem: null };
        break;
      }
      case "identExpr": {
        const s = scope.get(k.value.name);
        const v = this.shapeOf(k.value.name);
        shape = s ?? (v === "args" ? ARG : v === "small" ? { items: 100, text: 1024, elem: { items: 0, text: 1024, elem: null } } : SCALAR);
        break;
      }
      case "selectExpr":
        shape = k.value.testOnly ? (sub(k.value.operand), SCALAR) : (sub(k.value.operand).elem ?? SCALAR);
        break;
      case "listExpr": {
        let elem = SCALAR;
        for (const x of k.value.elements) elem = joinShape(elem, sub(x));
        shape = { items: k.value.elements.length, text: 0, elem };
        break;
      }
      case "structExpr": {
        let elem = SCALAR;
        for (const en of k.value.entries) {
          if (en.keyKind.case === "mapKey") sub(en.keyKind.value);
          elem = joinShape(elem, sub(en.value));
        }
        shape = { items: k.value.entries.length, text: 0, elem };
        break;
      }
      case "callExpr": {
        const r = this.call(k.value, sub);
        node.cost += r.charge;
        shape = r.shape;
        break;
      }
      case "comprehensionExpr": {
        const c = k.value;
        node.loop = true;
        const range = sub(c.iterRange);
        const init = sub(c.accuInit);
        const inner = new Map(scope);
        inner.set(c.iterVar, range.elem ?? SCALAR);
        if (c.iterVar2) inner.set(c.iterVar2, range.elem ?? SCALAR);
        const accu: Shape = { items: Math.max(init.items, range.items), text: init.text, elem: range.elem };
        inner.set(c.accuVar, accu);
        const before = node.cost;
        sub(c.loopCondition, inner);
        const stepShape = sub(c.loopStep, inner);
        // One iteration: the meter's step, the condition and the step; there are range.items of them.
        node.cost = before + range.items * (1 + node.cost - before);
        const after = new Map(scope);
        after.set(c.accuVar, joinShape(accu, stepShape));
        shape = sub(c.result, after);
        break;
      }
      default:
        break;
    }
    return { shape, node };
  }

  /** A call's result and what the meter charges for it (nothing for the operators the planner runs itself). */
  call(c: Extract<Expr["exprKind"], { case: "callExpr" }>["value"], sub: (x: Expr | undefined) => Shape): { shape: Shape; charge: number } {
    const target = c.target ? sub(c.target) : null;
    const args = c.args.map((a) => sub(a));
    const operands = target ? [target, ...args] : args;
    const fn = c.function;
    const planned = ["_&&_", "_||_", "_?_:_", "@not_strictly_false", "_[_]"].includes(fn);
    // Equality on values from the arguments is charged as scalars: their type is known only at
    // run time, where the meter charges what they hold; membership walks its list whatever it is.
    const walked = fn === "@in" ? operands.slice(-1) : operands.filter((s) => s !== ARG);
    const charge = planned
      ? 0
      : chargeFor(
          fn,
          operands.reduce((n, s) => n + s.text, 0),
          walked.reduce((n, s) => n + s.items, 0),
        );
    const [a, b] = args;
    let shape = SCALAR;
    if (fn === "_[_]") shape = a?.elem ?? SCALAR;
    else if (fn === "_?_:_") shape = joinShape(b!, args[2]!);
    else if (fn === "_+_" && a && b) shape = { items: a.items + b.items, text: a.text + b.text, elem: a.elem && b.elem ? joinShape(a.elem, b.elem) : (a.elem ?? b.elem) };
    else if (fn === "string" || fn === "bytes") shape = { items: 0, text: Math.max(32, operands[0]?.text ?? 0), elem: null };
    return { shape, charge };
  }
}

export type Estimate = { cost: number; part: { offset: number | null; text: string } };

/** The estimate of a parsed expression and the part of it that costs the most. */
export function estimateCost(parsed: ParsedCel, source: string, shapeOf: ShapeOf): Estimate {
  const root = new Estimator(shapeOf).est(parsed.expr, new Map()).node;
  const positions = parsed.sourceInfo?.positions ?? {};
  let part = root;
  // Down the tree while one child carries most of the cost; a loop is named whole.
  while (!part.loop) {
    const top = part.kids.reduce<Node | null>((a, b) => (!a || b.cost > a.cost ? b : a), null);
    if (!top || top.cost * 2 < part.cost) break;
    part = top;
  }
  return { cost: root.cost, part: spanOf(part, positions, source) };
}

function offsets(n: Node, positions: Record<string, number>, out: number[]): void {
  const p = positions[String(n.e.id)];
  if (typeof p === "number") out.push(p);
  for (const k of n.kids) offsets(k, positions, out);
}

/** The source text of a node: from its first position to the last, closing what it opened. */
function spanOf(n: Node, positions: Record<string, number>, source: string): { offset: number | null; text: string } {
  const at: number[] = [];
  offsets(n, positions, at);
  if (at.length === 0) return { offset: null, text: source };
  const start = Math.min(...at);
  let end = Math.max(...at);
  let depth = 0;
  for (let i = start; i < source.length; i++) {
    const ch = source[i]!;
    if ("([{".includes(ch)) depth++;
    else if (")]}".includes(ch)) {
      if (depth === 0) break;
      depth--;
    }
    if (i >= end && depth === 0 && !/[\w.'"]/.test(source[i + 1] ?? "")) {
      end = i;
      break;
    }
    end = Math.max(end, i);
  }
  return { offset: start, text: source.slice(start, end + 1).trim() };
}
