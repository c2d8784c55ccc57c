// @marcbachmann/cel-js as a cel-spec candidate: one Environment per case with the case's
// declared variables, checked unless the case disables checking, then evaluated.
import { Environment, evaluate } from "@marcbachmann/cel-js";
import type { CelCase, CelModel } from "../cases.ts";
import type { Implementation, Outcome } from "../judge.ts";

// cel-js exports no constructor for uint, duration or type values: take them from values it makes.
const UINT = (evaluate("0u") as object).constructor as new (v: bigint) => object;
const DURATION = (evaluate("duration('0s')") as object).constructor as new (s: bigint, n: number) => object;
const TYPE = (evaluate("int") as object).constructor;

function input(m: CelModel): unknown {
  switch (m.t) {
    case "null":
      return null;
    case "uint":
      return new UINT(m.v);
    case "list":
      return m.v.map(input);
    case "map":
      return new Map(m.v.map(([k, v]) => [input(k), input(v)]));
    case "type":
      return evaluate(m.v);
    case "duration":
      return new DURATION(m.seconds, m.nanos);
    case "timestamp":
      return new Date(Number(m.seconds) * 1000 + Math.floor(m.nanos / 1e6));
    case "proto":
      throw new Error(`cannot bind a ${m.type}`);
    default:
      return m.v;
  }
}

function model(v: unknown): CelModel {
  if (v === null || v === undefined) return { t: "null" };
  if (typeof v === "bigint") return { t: "int", v };
  if (typeof v === "number") return { t: "double", v };
  if (typeof v === "string") return { t: "string", v };
  if (typeof v === "boolean") return { t: "bool", v };
  if (v instanceof Uint8Array) return { t: "bytes", v };
  if (v instanceof UINT) return { t: "uint", v: (v as { value: bigint }).value };
  if (v instanceof DURATION) return { t: "duration", seconds: (v as { seconds: bigint }).seconds, nanos: (v as { nanos: number }).nanos };
  if (v instanceof Date) {
    const ms = v.getTime();
    return { t: "timestamp", seconds: BigInt(Math.floor(ms / 1000)), nanos: (((ms % 1000) + 1000) % 1000) * 1e6 };
  }
  if (v instanceof TYPE) return { t: "type", v: (v as { name: string }).name };
  if (Array.isArray(v)) return { t: "list", v: v.map(model) };
  if (v instanceof Map) return { t: "map", v: [...v].map(([k, x]) => [model(k), model(x)]) };
  if (typeof v === "object" && v.constructor === Object) return { t: "map", v: Object.entries(v).map(([k, x]) => [{ t: "string", v: k }, model(x)]) };
  return { t: "proto", type: String((v as object).constructor?.name) };
}

const celType = (t: string) => t.replace(/^type<.*>$/, "type").replace(/^wrapper\(.*\)$/, "dyn");

function stageOf(e: unknown): "parse" | "check" | "eval" {
  const n = (e as Error)?.constructor?.name ?? "";
  return n === "ParseError" ? "parse" : n === "TypeError" ? "check" : "eval";
}

export const celJs: Implementation = {
  name: "@marcbachmann/cel-js 8.0.0",
  run(c: CelCase): Outcome {
    try {
      const env = new Environment({ unlistedVariablesAreDyn: c.disableCheck, homogeneousAggregateLiterals: false, enableOptionalTypes: true });
      for (const [name, type] of c.vars) env.registerVariable(name, celType(type));
      const ctx: Record<string, unknown> = {};
      for (const [k, v] of c.bindings) ctx[k] = input(v);
      let type: string | undefined;
      if (!c.disableCheck) {
        const r = env.check(c.expr) as { valid: boolean; type?: unknown; error?: Error };
        if (!r.valid) return { kind: "error", stage: stageOf(r.error), message: r.error?.message ?? "invalid" };
        type = String(r.type);
      }
      if (c.expected.kind === "check_only") return { kind: "value", value: { t: "null" }, type };
      return { kind: "value", value: model(env.evaluate(c.expr, ctx)), type };
    } catch (e) {
      return { kind: "error", stage: stageOf(e), message: (e as Error).message ?? String(e) };
    }
  },
};
