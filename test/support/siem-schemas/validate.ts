// Validators of OCSF events and ECS documents against the vendored schemas beside this file
// (scripts/vendor-siem-schemas.ts wrote them; their `source` names the commit). Each returns the
// problems found, as "path: what is wrong"; an empty list is a valid event. Test support only.
import { isIP } from "node:net";
import ecsSchema from "./ecs-9.4.0.json";
import ocsfSchema from "./ocsf-1.8.0.json";

type Attr = { type: string; object_type?: string; is_array?: boolean; requirement: string; enum?: Record<string, string>; profile?: string; sibling?: string };
type Shape = { attributes: Record<string, Attr>; constraints?: { at_least_one?: string[]; just_one?: string[] } };
type OcsfSchema = {
  version: string;
  types: Record<string, { type?: string; regex?: string; max_len?: number; range?: [number, number] }>;
  classes: Record<string, Shape & { name: string; category_uid: number }>;
  objects: Record<string, Shape>;
};

const OCSF = ocsfSchema as unknown as OcsfSchema;
export const OCSF_SCHEMA_VERSION = OCSF.version;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A scalar against an OCSF type, following the type's base types (email_t → string_t) and their regex and ranges. */
function scalarProblem(type: string, v: unknown): string | null {
  const t = OCSF.types[type];
  if (!t) return `unknown type ${type}`;
  switch (type) {
    case "string_t":
      return typeof v === "string" ? null : `expected a string, got ${JSON.stringify(v)}`;
    case "integer_t":
      return Number.isInteger(v) && Math.abs(v as number) < 2 ** 31 ? null : `expected a 32-bit integer, got ${JSON.stringify(v)}`;
    case "long_t":
      return Number.isSafeInteger(v) ? null : `expected a long, got ${JSON.stringify(v)}`;
    case "float_t":
      return typeof v === "number" ? null : `expected a number, got ${JSON.stringify(v)}`;
    case "boolean_t":
      return typeof v === "boolean" ? null : `expected a boolean, got ${JSON.stringify(v)}`;
    case "json_t":
      return null;
  }
  if (!t.type) return `type ${type} has no base type`;
  const base = scalarProblem(t.type, v);
  if (base) return base;
  if (type === "ip_t" && !isIP(v as string)) return `${JSON.stringify(v)} is not an IP address`;
  if (t.regex && !new RegExp(t.regex).test(String(v))) return `${JSON.stringify(v)} does not match ${type}'s pattern`;
  if (t.max_len && String(v).length > t.max_len) return `longer than ${t.max_len}`;
  if (t.range && ((v as number) < t.range[0] || (v as number) > t.range[1])) return `outside ${t.range.join("..")}`;
  return null;
}

function checkShape(shape: Shape, value: Record<string, unknown>, path: string, profiles: Set<string>, out: string[]): void {
  const applies = (a: Attr) => !a.profile || profiles.has(a.profile);
  for (const [name, a] of Object.entries(shape.attributes))
    if (a.requirement === "required" && applies(a) && (value[name] === undefined || value[name] === null)) out.push(`${path}${name}: required, missing`);
  for (const [name, v] of Object.entries(value)) {
    const a = shape.attributes[name];
    const at = `${path}${name}`;
    if (!a) {
      out.push(`${at}: not an attribute of this class or object`);
      continue;
    }
    if (!applies(a)) out.push(`${at}: belongs to the ${a.profile} profile, not in metadata.profiles`);
    if (a.is_array !== Array.isArray(v) && !(a.is_array === undefined && !Array.isArray(v))) {
      out.push(`${at}: ${a.is_array ? "expected an array" : "not an array attribute"}`);
      continue;
    }
    for (const [i, item] of (Array.isArray(v) ? v : [v]).entries()) {
      const p = Array.isArray(v) ? `${at}[${i}]` : at;
      if (a.object_type) {
        if (!isObject(item)) out.push(`${p}: expected a ${a.object_type} object`);
        else if (a.object_type !== "object") checkShape(OCSF.objects[a.object_type]!, item, `${p}.`, profiles, out);
        continue;
      }
      const problem = scalarProblem(a.type, item);
      if (problem) out.push(`${p}: ${problem}`);
      else if (a.enum && !Object.hasOwn(a.enum, String(item))) out.push(`${p}: ${JSON.stringify(item)} is not one of ${Object.keys(a.enum).join(", ")}`);
      else if (a.enum && a.sibling) {
        const caption = value[a.sibling];
        if (String(item) === "99" && typeof caption !== "string") out.push(`${path}${a.sibling}: required when ${name} is 99 (Other)`);
        if (String(item) !== "99" && caption !== undefined && caption !== a.enum[String(item)] && a.sibling !== "activity_name" && a.sibling !== "type_name")
          out.push(`${path}${a.sibling}: ${JSON.stringify(caption)} is not the caption of ${name} ${item} (${a.enum[String(item)]})`);
      }
    }
  }
  const present = (n: string) => value[n] !== undefined && value[n] !== null;
  const c = shape.constraints;
  if (c?.at_least_one && !c.at_least_one.some(present)) out.push(`${path || "event"}: needs at least one of ${c.at_least_one.join(", ")}`);
  if (c?.just_one && c.just_one.filter(present).length !== 1) out.push(`${path || "event"}: needs exactly one of ${c.just_one.join(", ")}`);
}

/** The problems of one OCSF event against the vendored schema (class, required attributes, types, enums, profiles, constraints). */
export function ocsfProblems(event: Record<string, unknown>): string[] {
  const cls = OCSF.classes[String(event.class_uid)];
  if (!cls) return [`class_uid: ${JSON.stringify(event.class_uid)} is not a vendored class (${Object.keys(OCSF.classes).join(", ")})`];
  const out: string[] = [];
  const metadata = isObject(event.metadata) ? event.metadata : {};
  const profiles = new Set(Array.isArray(metadata.profiles) ? (metadata.profiles as string[]) : []);
  checkShape(cls, event, "", profiles, out);
  if (event.category_uid !== cls.category_uid) out.push(`category_uid: ${JSON.stringify(event.category_uid)}, the class's is ${cls.category_uid}`);
  if (event.type_uid !== Number(event.class_uid) * 100 + Number(event.activity_id)) out.push(`type_uid: ${JSON.stringify(event.type_uid)} is not class_uid × 100 + activity_id`);
  if (metadata.version !== OCSF.version) out.push(`metadata.version: ${JSON.stringify(metadata.version)}, the schema is ${OCSF.version}`);
  return out;
}

// ---------------------------------------------------------------- ECS

type EcsField = { type: string; array?: boolean; allowed_values?: Record<string, string[] | null>; pattern?: string };
const ECS = ecsSchema as unknown as { version: string; fields: Record<string, EcsField> };
export const ECS_SCHEMA_VERSION = ECS.version;

/** Every leaf of a document as [dotted name, value] (an array of scalars is one leaf). */
export function ecsLeaves(doc: Record<string, unknown>, prefix = ""): [string, unknown][] {
  return Object.entries(doc).flatMap(([k, v]) =>
    isObject(v) && !(ECS.fields[`${prefix}${k}`]?.type === "flattened" || ECS.fields[`${prefix}${k}`]?.type === "object")
      ? ecsLeaves(v, `${prefix}${k}.`)
      : [[`${prefix}${k}`, v] as [string, unknown]],
  );
}

function ecsValueProblem(f: EcsField, v: unknown): string | null {
  switch (f.type) {
    case "keyword":
    case "constant_keyword":
    case "wildcard":
    case "match_only_text":
    case "text":
      return typeof v === "string" ? null : `expected a string (${f.type})`;
    case "long":
    case "integer":
    case "short":
    case "byte":
      return Number.isSafeInteger(v) ? null : `expected an integer (${f.type})`;
    case "float":
    case "double":
    case "scaled_float":
    case "half_float":
      return typeof v === "number" ? null : `expected a number (${f.type})`;
    case "boolean":
      return typeof v === "boolean" ? null : "expected a boolean";
    case "date":
      return typeof v === "string" && !Number.isNaN(Date.parse(v)) ? null : "expected an ISO 8601 date";
    case "ip":
      return typeof v === "string" && isIP(v) ? null : "expected an IP address";
    case "object":
    case "flattened":
      return isObject(v) ? null : "expected an object";
  }
  return `unhandled ECS type ${f.type}`;
}

/**
 * The problems of one ECS document, field by field: every leaf outside `custom.` namespaces is an
 * ECS field of the vendored reference with a value of its type, arrays only where ECS normalizes
 * to arrays, allowed values only, and each event.type expected by every event.category.
 */
export function ecsProblems(doc: Record<string, unknown>, customNamespaces: string[]): string[] {
  const out: string[] = [];
  for (const [name, v] of ecsLeaves(doc)) {
    if (customNamespaces.some((ns) => name.startsWith(`${ns}.`))) {
      if (ECS.fields[name] || Object.keys(ECS.fields).some((f) => f.startsWith(`${name.split(".")[0]}.`))) out.push(`${name}: the custom namespace collides with ECS`);
      continue;
    }
    const f = ECS.fields[name];
    if (!f) {
      out.push(`${name}: not an ECS ${ECS.version} field`);
      continue;
    }
    if (Array.isArray(v) && !f.array) out.push(`${name}: ECS does not normalize this field to an array`);
    for (const item of Array.isArray(v) ? v : [v]) {
      const problem = ecsValueProblem(f, item);
      if (problem) out.push(`${name}: ${problem}, got ${JSON.stringify(item)}`);
      else if (f.allowed_values && !Object.hasOwn(f.allowed_values, item as string)) out.push(`${name}: ${JSON.stringify(item)} is not an allowed value`);
    }
  }
  const event = isObject(doc.event) ? doc.event : {};
  const categories = (event.category ?? []) as string[];
  const allowed = ECS.fields["event.category"]!.allowed_values!;
  for (const t of (event.type ?? []) as string[]) for (const c of categories) if (allowed[c] && !allowed[c].includes(t)) out.push(`event.type: ${t} is not expected with event.category ${c}`);
  return out;
}
