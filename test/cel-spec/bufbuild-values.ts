// Values between the neutral model (cases.ts) and @bufbuild/cel's inputs and outputs; used
// by the @bufbuild/cel candidate and by svc's own engine, which runs on that library.
import { CelScalar, type CelType, celUint, isCelList, isCelMap, isCelType, isCelUint, listType, mapType, objectType } from "@bufbuild/cel";
import { create } from "@bufbuild/protobuf";
import { isReflectMessage } from "@bufbuild/protobuf/reflect";
import { DurationSchema, TimestampSchema } from "@bufbuild/protobuf/wkt";
import type { CelModel } from "./cases.ts";

const SCALARS: Record<string, CelType> = {
  int: CelScalar.INT,
  uint: CelScalar.UINT,
  bool: CelScalar.BOOL,
  string: CelScalar.STRING,
  bytes: CelScalar.BYTES,
  double: CelScalar.DOUBLE,
  null_type: CelScalar.NULL,
  dyn: CelScalar.DYN,
};

/** A type text (`list<map<string, int>>`) as a CelType; unknown names are object types. */
export function typeOf(t: string): CelType {
  const s = t.replace(/\s+/g, "");
  if (SCALARS[s]) return SCALARS[s]!;
  if (s.startsWith("type")) return CelScalar.TYPE;
  if (s === "google.protobuf.Timestamp") return objectType(TimestampSchema);
  if (s === "google.protobuf.Duration") return objectType(DurationSchema);
  const list = /^list<(.*)>$/.exec(s);
  if (list) return listType(typeOf(list[1]!));
  const map = /^map<([^,<]+),(.*)>$/.exec(s);
  if (map) return mapType(typeOf(map[1]!) as never, typeOf(map[2]!));
  return objectType(s);
}

export function input(m: CelModel): unknown {
  switch (m.t) {
    case "null":
      return null;
    case "uint":
      return celUint(m.v);
    case "list":
      return m.v.map(input);
    case "map":
      return new Map(m.v.map(([k, v]) => [input(k), input(v)]));
    case "type":
      return typeOf(m.v);
    case "duration":
      return create(DurationSchema, { seconds: m.seconds, nanos: m.nanos });
    case "timestamp":
      return create(TimestampSchema, { seconds: m.seconds, nanos: m.nanos });
    case "proto":
      throw new Error(`cannot bind a ${m.type}`);
    default:
      return m.v;
  }
}

export function model(v: unknown): CelModel {
  if (v === null || v === undefined) return { t: "null" };
  if (typeof v === "bigint") return { t: "int", v };
  if (typeof v === "number") return { t: "double", v };
  if (typeof v === "string") return { t: "string", v };
  if (typeof v === "boolean") return { t: "bool", v };
  if (v instanceof Uint8Array) return { t: "bytes", v };
  if (isCelUint(v)) return { t: "uint", v: v.value };
  if (isCelList(v)) return { t: "list", v: [...v].map(model) };
  if (isCelMap(v)) return { t: "map", v: [...v].map(([k, x]) => [model(k), model(x)]) };
  if (isCelType(v)) return { t: "type", v: v.name };
  if (isReflectMessage(v)) {
    const name = v.desc.typeName;
    if (name === "google.protobuf.Duration" || name === "google.protobuf.Timestamp") {
      const m = v.message as unknown as { seconds: bigint; nanos: number };
      return { t: name.endsWith("Duration") ? "duration" : "timestamp", seconds: m.seconds, nanos: m.nanos };
    }
    return { t: "proto", type: name };
  }
  return { t: "proto", type: String((v as object).constructor?.name) };
}
