// cel-spec's simple conformance tests (testdata/*.textproto, SimpleTestFile in the spec's
// proto/cel/expr/conformance/test/simple.proto) as plain cases: the expression, its variables
// (declared types and bound values), and what must come out: a value, an error, or a value
// and the type the checker deduces. Values are in a neutral model (CelModel) that each
// candidate library's adapter converts to and from.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { flag, message, messages, one, parseTextproto, text, token, type TpMessage, type TpValue } from "./textproto.ts";

export const TESTDATA = join(import.meta.dir, "testdata");

export type CelModel =
  | { t: "null" }
  | { t: "bool"; v: boolean }
  | { t: "int" | "uint"; v: bigint }
  | { t: "double"; v: number }
  | { t: "string"; v: string }
  | { t: "bytes"; v: Uint8Array }
  | { t: "list"; v: CelModel[] }
  | { t: "map"; v: [CelModel, CelModel][] }
  | { t: "type"; v: string }
  | { t: "duration" | "timestamp"; seconds: bigint; nanos: number }
  /** A protobuf message or enum value: only a library with protobuf types can hold it. */
  | { t: "proto"; type: string };

export type Expected = { kind: "value"; value: CelModel; type?: string } | { kind: "error" } | { kind: "unknown" } | { kind: "check_only"; type: string };

export type CelCase = {
  file: string;
  section: string;
  name: string;
  expr: string;
  container: string;
  disableMacros: boolean;
  disableCheck: boolean;
  /** Declared variables: name → CEL type text (`int`, `list<dyn>`, …). */
  vars: Map<string, string>;
  bindings: Map<string, CelModel>;
  expected: Expected;
  /** Why the case needs protobuf message types, or null (see PROTO_RULES). */
  needsProto: string | null;
};

const UTF8 = new TextDecoder("utf-8", { fatal: true });
const strOf = (v: TpValue | undefined): string => (v?.kind === "string" ? UTF8.decode(v.bytes) : v?.kind === "token" ? v.text : "");

function number(m: TpMessage, name: string): number {
  const t = token(m, name) ?? "0";
  if (/^-?inf(inity)?$/i.test(t)) return t.startsWith("-") ? -Infinity : Infinity;
  if (/^-?nan$/i.test(t)) return NaN;
  return Number(t.replace(/[fF]$/, ""));
}

const WKT_TIME = new Set(["google.protobuf.Timestamp", "google.protobuf.Duration"]);

/** A cel.expr.Value as a model value. */
export function modelOf(v: TpMessage): CelModel {
  const [f] = v.fields;
  if (!f) return { t: "null" };
  const val = f.value;
  const tok = val.kind === "token" ? val.text : "";
  switch (f.name) {
    case "null_value":
      return { t: "null" };
    case "bool_value":
      return { t: "bool", v: tok === "true" || tok === "t" };
    case "int64_value":
      return { t: "int", v: BigInt(tok) };
    case "uint64_value":
      return { t: "uint", v: BigInt(tok) };
    case "double_value":
      return { t: "double", v: number(v, "double_value") };
    case "string_value":
      return { t: "string", v: strOf(val) };
    case "bytes_value":
      return { t: "bytes", v: val.kind === "string" ? val.bytes : new Uint8Array() };
    case "type_value":
      return { t: "type", v: strOf(val) };
    case "enum_value":
      return { t: "proto", type: `enum ${val.kind === "message" ? text(val, "type") : ""}` };
    case "list_value":
      return { t: "list", v: val.kind === "message" ? messages(val, "values").map(modelOf) : [] };
    case "map_value":
      return { t: "map", v: val.kind === "message" ? messages(val, "entries").map((e) => [modelOf(message(e, "key")!), modelOf(message(e, "value")!)]) : [] };
    case "object_value": {
      const any = val.kind === "message" ? val.fields[0] : undefined;
      const type = any?.name.replace(/^\[type\.googleapis\.com\/(.*)\]$/, "$1") ?? "";
      if (WKT_TIME.has(type) && any?.value.kind === "message") {
        const seconds = BigInt(token(any.value, "seconds") ?? "0");
        const nanos = Number(token(any.value, "nanos") ?? "0");
        return { t: type.endsWith("Duration") ? "duration" : "timestamp", seconds, nanos };
      }
      return { t: "proto", type };
    }
    default:
      throw new Error(`unknown Value field ${f.name}`);
  }
}

const PRIMITIVES: Record<string, string> = { BOOL: "bool", INT64: "int", UINT64: "uint", DOUBLE: "double", STRING: "string", BYTES: "bytes" };

/** A cel.expr.Type as CEL writes types: `int`, `list<string>`, `map<string, dyn>`, … */
export function typeText(t: TpMessage): string {
  const [f] = t.fields;
  if (!f) return "dyn";
  const sub = f.value.kind === "message" ? f.value : undefined;
  const tok = f.value.kind === "token" ? f.value.text : strOf(f.value);
  switch (f.name) {
    case "primitive":
      return PRIMITIVES[tok] ?? tok.toLowerCase();
    case "dyn":
      return "dyn";
    case "null":
      return "null_type";
    case "well_known":
      return tok === "TIMESTAMP" ? "google.protobuf.Timestamp" : tok === "DURATION" ? "google.protobuf.Duration" : `google.protobuf.${tok === "ANY" ? "Any" : tok}`;
    case "list_type":
      return `list<${typeText(message(sub!, "elem_type")!)}>`;
    case "map_type":
      return `map<${typeText(message(sub!, "key_type")!)}, ${typeText(message(sub!, "value_type")!)}>`;
    case "message_type":
      return tok;
    case "type":
      return `type<${typeText(sub!)}>`;
    case "type_param":
      return tok;
    case "wrapper":
      return `wrapper(${PRIMITIVES[tok] ?? tok})`;
    case "abstract_type": {
      const params = messages(sub!, "parameter_types").map(typeText);
      return params.length ? `${text(sub!, "name")}<${params.join(", ")}>` : text(sub!, "name");
    }
    case "error":
      return "error";
    default:
      return f.name;
  }
}

// How a case is classed as needing protobuf message types: it names a message or enum type
// other than google.protobuf.Timestamp and Duration (CEL's own timestamp and duration) in its
// expression, container, declared types, bound values or expected value; or builds a message
// with `Type{…}` in its expression; or expects an enum value. Wrapper types
// (google.protobuf.Int64Value, …), Any, Struct/Value/ListValue and the conformance messages
// (TestAllTypes, …) are all protobuf messages.
const PROTO_NAME = /\bcel\.expr\.conformance\b|\bgoogle\.protobuf\.(?!Timestamp\b|Duration\b)[A-Z]\w*|\b(?:TestAllTypes|NestedTestAllTypes|NestedMessage|NestedEnum|GlobalEnum|TestRequired\w*)\b/;
const MESSAGE_LITERAL = /(?<![\w.'"])(?!in\b)[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*\s*\{/;

function walk(v: TpValue, visit: (name: string, value: TpValue) => void): void {
  if (v.kind !== "message") return;
  for (const f of v.fields) {
    visit(f.name, f.value);
    walk(f.value, visit);
  }
}

function protoReason(test: TpMessage, expr: string, container: string): string | null {
  if (PROTO_NAME.test(container)) return `container ${container}`;
  const stripped = expr.replace(/'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"/g, "''");
  const named = PROTO_NAME.exec(stripped);
  if (named) return `the expression names ${named[0]}`;
  if (MESSAGE_LITERAL.test(stripped)) return "the expression builds a message";
  let why: string | null = null;
  walk(test, (name, value) => {
    if (why) return;
    const any = /^\[type\.googleapis\.com\/(.*)\]$/.exec(name);
    if (any && !WKT_TIME.has(any[1]!)) why = `a value of type ${any[1]}`;
    else if (name === "enum_value") why = "an enum value";
    else if (name === "wrapper") why = "a wrapper type";
    else if (name === "message_type" && !WKT_TIME.has(strOf(value))) why = `type ${strOf(value)}`;
    else if (name === "well_known" && strOf(value) === "ANY") why = "type google.protobuf.Any";
    else if ((name === "type_value" || name === "type") && value.kind !== "message" && PROTO_NAME.test(strOf(value))) why = `type ${strOf(value)}`;
  });
  return why;
}

function expectedOf(test: TpMessage): Expected {
  const value = message(test, "value");
  if (value) return { kind: "value", value: modelOf(value) };
  const typed = message(test, "typed_result");
  if (typed) {
    const type = typeText(message(typed, "deduced_type")!);
    const result = message(typed, "result");
    return flag(test, "check_only") || !result ? { kind: "check_only", type } : { kind: "value", value: modelOf(result), type };
  }
  if (one(test, "eval_error") || one(test, "any_eval_errors")) return { kind: "error" };
  if (one(test, "unknown") || one(test, "any_unknowns")) return { kind: "unknown" };
  return { kind: "value", value: { t: "bool", v: true } }; // simple.proto: no matcher means true
}

function caseOf(file: string, section: string, test: TpMessage): CelCase {
  const expr = text(test, "expr");
  const container = text(test, "container");
  const vars = new Map<string, string>();
  for (const d of messages(test, "type_env")) {
    const ident = message(d, "ident");
    if (ident) vars.set(text(d, "name"), typeText(message(ident, "type") ?? { kind: "message", fields: [] }));
  }
  const bindings = new Map<string, CelModel>();
  for (const b of messages(test, "bindings")) {
    const ev = message(b, "value");
    const v = ev && message(ev, "value");
    if (v) bindings.set(text(b, "key"), modelOf(v));
  }
  return {
    file,
    section,
    name: text(test, "name"),
    expr,
    container,
    disableMacros: flag(test, "disable_macros"),
    disableCheck: flag(test, "disable_check"),
    vars,
    bindings,
    expected: expectedOf(test),
    needsProto: protoReason(test, expr, container),
  };
}

/** Every case of every file, in file order. */
export function loadCases(dir = TESTDATA): CelCase[] {
  const out: CelCase[] = [];
  for (const f of readdirSync(dir)
    .filter((n) => n.endsWith(".textproto"))
    .sort()) {
    const file = f.replace(/\.textproto$/, "");
    const doc = parseTextproto(readFileSync(join(dir, f), "utf8"));
    for (const s of messages(doc, "section")) for (const t of messages(s, "test")) out.push(caseOf(file, text(s, "name"), t));
  }
  return out;
}
