// What an implementation's answer to a cel-spec case is, and whether it is the spec's.
// An implementation (a candidate library, or svc's own conditions) turns a case into an
// Outcome; judge() compares it with the case's expectation.
import type { CelCase, CelModel } from "./cases.ts";

export type Outcome = { kind: "value"; value: CelModel; type?: string } | { kind: "error"; stage: "parse" | "check" | "eval"; message: string };

export type Implementation = { name: string; run(c: CelCase): Outcome };

export type Verdict = { pass: boolean; why: string };

export function sameModel(a: CelModel, b: CelModel): boolean {
  if (a.t !== b.t) return false;
  switch (a.t) {
    case "null":
      return true;
    case "double": {
      const y = (b as typeof a).v;
      return a.v === y || (Number.isNaN(a.v) && Number.isNaN(y));
    }
    case "bytes": {
      const y = (b as typeof a).v;
      return a.v.length === y.length && a.v.every((x, i) => x === y[i]);
    }
    case "list": {
      const y = (b as typeof a).v;
      return a.v.length === y.length && a.v.every((x, i) => sameModel(x, y[i]!));
    }
    case "map": {
      const y = (b as typeof a).v;
      return a.v.length === y.length && a.v.every(([k, v]) => y.some(([k2, v2]) => sameModel(k, k2) && sameModel(v, v2)));
    }
    case "duration":
    case "timestamp": {
      const y = b as typeof a;
      return a.seconds === y.seconds && a.nanos === y.nanos;
    }
    case "proto":
      return a.type === (b as typeof a).type;
    default:
      return a.v === (b as typeof a).v;
  }
}

export function showModel(m: CelModel): string {
  switch (m.t) {
    case "null":
      return "null";
    case "int":
      return String(m.v);
    case "uint":
      return `${m.v}u`;
    case "double":
      return Number.isInteger(m.v) ? `${m.v}.0` : String(m.v);
    case "string":
      return JSON.stringify(m.v);
    case "bytes":
      return `b"${[...m.v].map((x) => `\\x${x.toString(16).padStart(2, "0")}`).join("")}"`;
    case "list":
      return `[${m.v.map(showModel).join(", ")}]`;
    case "map":
      return `{${m.v.map(([k, v]) => `${showModel(k)}: ${showModel(v)}`).join(", ")}}`;
    case "type":
      return `type(${m.v})`;
    case "duration":
    case "timestamp":
      return `${m.t}(${m.seconds}s ${m.nanos}ns)`;
    case "proto":
      return `<${m.type}>`;
    default:
      return String((m as { v: unknown }).v);
  }
}

// Type names as the spec writes them and as libraries print them.
const normType = (t: string) =>
  t
    .replace(/\s+/g, "")
    .replace(/\bnull\b(?!_type)/g, "null_type")
    .replace(/\btimestamp\b/g, "google.protobuf.Timestamp")
    .replace(/\bduration\b/g, "google.protobuf.Duration");

export function judge(c: CelCase, o: Outcome): Verdict {
  const e = c.expected;
  if (e.kind === "error") return o.kind === "error" ? { pass: true, why: "errors" } : { pass: false, why: `gives ${showModel(o.value)} where the spec requires an error` };
  if (e.kind === "unknown") return { pass: false, why: "unknowns are not supported" };
  if (o.kind === "error") return { pass: false, why: `${o.stage} error: ${o.message.split("\n")[0]!.slice(0, 140)}` };
  if (e.kind === "check_only" || e.type) {
    const want = e.kind === "check_only" ? e.type : e.type!;
    if (!o.type) return { pass: false, why: `no deduced type (the spec deduces ${want})` };
    if (normType(o.type) !== normType(want)) return { pass: false, why: `deduces ${o.type}, the spec ${want}` };
    if (e.kind === "check_only") return { pass: true, why: "type" };
  }
  if (e.kind === "value" && !sameModel(o.value, e.value)) return { pass: false, why: `gives ${showModel(o.value)}, the spec ${showModel(e.value)}` };
  return { pass: true, why: "value" };
}
