// Writes the schema subsets the OCSF and ECS output is validated against in tests
// (test/support/siem-schemas/, src/controlplane/audit/siem-formats.test.ts). Run by hand when
// moving to another schema version, from local checkouts (nothing is downloaded here):
//
//   bun scripts/vendor-siem-schemas.ts <ocsf-schema git dir> <commit> <ecs git dir> <commit>
//
// The files in test/support/siem-schemas/ name the commits they were made from.
//
// OCSF: the ocsf/ocsf-schema repository at a release (version.json), compiled the way the OCSF
// server compiles it for the classes svc emits: each class's `extends` chain (class, category
// base, base_event) merged attribute by attribute over the dictionary's definitions, `$include`d
// profiles and includes kept with the profile they came from, and every object reachable from
// those classes (with its own `extends` chain and constraints). ECS: generated/ecs/ecs_flat.yml
// of the elastic/ecs repository at a release tag, the field sets svc fills.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** The OCSF classes svc maps records to (docs/siem.md "OCSF"). */
const OCSF_CLASSES = ["iam/account_change", "iam/authentication", "iam/entity_management", "application/api_activity"];
/** The ECS field sets svc fills (docs/siem.md "ECS"); `base` is the top-level fields (@timestamp, message, labels, tags). */
const ECS_FIELD_SETS = ["base", "ecs", "event", "user", "rule", "organization", "source", "user_agent", "service", "observer", "related", "error", "gen_ai", "http", "url"];

type Json = Record<string, unknown>;
const [ocsfDir, ocsfRev, ecsDir, ecsRev] = process.argv.slice(2);
if (!ocsfDir || !ocsfRev || !ecsDir || !ecsRev) {
  console.error("usage: bun scripts/vendor-siem-schemas.ts <ocsf-schema git dir> <commit> <ecs git dir> <commit>");
  process.exit(2);
}
const git = (dir: string, ...args: string[]) => execFileSync("git", ["-C", dir, ...args], { encoding: "utf8", maxBuffer: 64 << 20 });
const show = (path: string): Json => JSON.parse(git(ocsfDir, "show", `${ocsfRev}:${path}`));

// ---------------------------------------------------------------- OCSF

const dictionary = show("dictionary.json") as { attributes: Record<string, Json>; types: { attributes: Record<string, Json> } };
const ocsfVersion = (show("version.json") as { version: string }).version;

/** Deep merge of attribute definitions: b over a; enums are united (a class adds values to its base's). */
function merge(a: Json | undefined, b: Json | undefined): Json {
  const out: Json = { ...(a ?? {}) };
  for (const [k, v] of Object.entries(b ?? {})) out[k] = v && typeof v === "object" && !Array.isArray(v) && out[k] && typeof out[k] === "object" ? merge(out[k] as Json, v as Json) : v;
  return out;
}

/** A definition's attributes with its `$include`s expanded (each included attribute tagged with its profile, if a profile). */
function ownAttributes(def: Json): Record<string, Json> {
  const attrs = { ...((def.attributes ?? {}) as Record<string, Json>) };
  const includes = (attrs.$include ?? []) as unknown as string[];
  delete attrs.$include;
  const out: Record<string, Json> = {};
  for (const inc of typeof includes === "string" ? [includes] : includes) {
    const included = show(inc);
    const profile = included.meta === "profile" ? (included.name as string) : null;
    for (const [name, a] of Object.entries(ownAttributes(included))) out[name] = merge(out[name], profile && a.profile === undefined ? { ...a, profile } : a);
  }
  for (const [name, a] of Object.entries(attrs)) out[name] = merge(out[name], a);
  return out;
}

/** The compiled attribute: what a validator needs (type, array, requirement, enum, the profile it needs). */
function compileAttribute(name: string, a: Json) {
  const d = merge(dictionary.attributes[name], a);
  if (!d.type) throw new Error(`attribute ${name} has no type in the dictionary`);
  const type = d.type as string;
  return {
    type,
    ...(type.endsWith("_t") ? {} : { object_type: type }),
    ...(d.is_array ? { is_array: true } : {}),
    requirement: (d.requirement as string | undefined) ?? "optional",
    ...(d.enum ? { enum: Object.fromEntries(Object.entries(d.enum as Record<string, Json>).map(([k, v]) => [k, (v as Json).caption])) } : {}),
    ...(typeof d.profile === "string" ? { profile: d.profile } : {}),
    ...(d.sibling ? { sibling: d.sibling } : {}),
  };
}

function chain(load: (name: string) => Json, def: Json): Json[] {
  const out = [def];
  while (out[out.length - 1]!.extends) out.push(load(out[out.length - 1]!.extends as string));
  return out.reverse();
}

const eventFile = (name: string) => {
  if (name === "base_event") return show("events/base_event.json");
  const path = git(ocsfDir, "ls-tree", "-r", "--name-only", ocsfRev, "events/")
    .split("\n")
    .find((p) => p.endsWith(`/${name}.json`));
  if (!path) throw new Error(`no event ${name}`);
  return show(path);
};

const objectsNeeded = new Set<string>();
const classes: Record<string, Json> = {};
for (const path of OCSF_CLASSES) {
  const defs = chain(eventFile, show(`events/${path}.json`));
  const category = defs.find((d) => d.category && d.name !== "base_event")?.category as string;
  const cat = (show("categories.json") as { attributes: Record<string, { uid: number; caption: string }> }).attributes[category]!;
  const leaf = defs[defs.length - 1]!;
  let attrs: Record<string, Json> = {};
  for (const d of defs) for (const [n, a] of Object.entries(ownAttributes(d))) attrs[n] = merge(attrs[n], a);
  attrs = Object.fromEntries(Object.entries(attrs).map(([n, a]) => [n, compileAttribute(n, a)]));
  const uid = cat.uid * 1000 + (leaf.uid as number);
  // As the OCSF server compiles a class: its own uid, category and type values are the only ones allowed.
  attrs.class_uid = { ...attrs.class_uid!, enum: { [uid]: leaf.caption } };
  attrs.category_uid = { ...attrs.category_uid!, enum: { [cat.uid]: cat.caption } };
  const activities = attrs.activity_id!.enum as Record<string, string>;
  attrs.type_uid = { ...attrs.type_uid!, enum: Object.fromEntries(Object.entries(activities).map(([a, caption]) => [uid * 100 + Number(a), `${leaf.caption}: ${caption}`])) };
  for (const a of Object.values(attrs)) if (a.object_type) objectsNeeded.add(a.object_type as string);
  classes[String(uid)] = {
    name: leaf.name,
    caption: leaf.caption,
    category_uid: cat.uid,
    category_name: cat.caption,
    attributes: attrs,
    ...(leaf.constraints ? { constraints: leaf.constraints } : {}),
  };
}

const objects: Record<string, Json> = {};
const objectFile = (name: string) => show(`objects/${name}.json`);
const queue = [...objectsNeeded];
while (queue.length > 0) {
  const name = queue.shift()!;
  if (objects[name]) continue;
  const defs = chain(objectFile, objectFile(name));
  let attrs: Record<string, Json> = {};
  let constraints: unknown;
  for (const d of defs) {
    for (const [n, a] of Object.entries(ownAttributes(d))) attrs[n] = merge(attrs[n], a);
    if (d.constraints) constraints = d.constraints;
  }
  attrs = Object.fromEntries(Object.entries(attrs).map(([n, a]) => [n, compileAttribute(n, a)]));
  objects[name] = { attributes: attrs, ...(constraints ? { constraints } : {}) };
  for (const a of Object.values(attrs)) if (a.object_type && !objects[a.object_type as string]) queue.push(a.object_type as string);
}

const types = Object.fromEntries(
  Object.entries(dictionary.types.attributes).map(([n, t]) => [
    n,
    { ...(t.type ? { type: t.type } : {}), ...(t.regex ? { regex: t.regex } : {}), ...(t.max_len ? { max_len: t.max_len } : {}), ...(t.range ? { range: t.range } : {}) },
  ]),
);

const out = join(import.meta.dir, "..", "test", "support", "siem-schemas");
mkdirSync(out, { recursive: true });
const ocsfCommit = git(ocsfDir, "rev-parse", `${ocsfRev}^{commit}`).trim();
writeFileSync(
  join(out, `ocsf-${ocsfVersion}.json`),
  `${JSON.stringify({ source: `github.com/ocsf/ocsf-schema at ${ocsfCommit} (version.json ${ocsfVersion}), compiled by scripts/vendor-siem-schemas.ts`, version: ocsfVersion, types, classes, objects })}\n`,
);

// ---------------------------------------------------------------- ECS

const ecsVersion = git(ecsDir, "show", `${ecsRev}:version`).trim();
const flat = Bun.YAML.parse(git(ecsDir, "show", `${ecsRev}:generated/ecs/ecs_flat.yml`)) as Record<string, Json>;
const nested = Bun.YAML.parse(git(ecsDir, "show", `${ecsRev}:generated/ecs/ecs_nested.yml`)) as Record<string, { fields: Record<string, Json> }>;
const wanted = new Set(ECS_FIELD_SETS.flatMap((set) => Object.values(nested[set]?.fields ?? {}).map((f) => f.flat_name as string)));
const fields = Object.fromEntries(
  Object.entries(flat)
    .filter(([name]) => wanted.has(name))
    .map(([name, f]) => [
      name,
      {
        type: f.type,
        ...(Array.isArray(f.normalize) && f.normalize.includes("array") ? { array: true } : {}),
        ...(f.allowed_values ? { allowed_values: Object.fromEntries((f.allowed_values as Json[]).map((v) => [v.name, v.expected_event_types ?? null])) } : {}),
        ...(f.pattern ? { pattern: f.pattern } : {}),
      },
    ]),
);
const ecsCommit = git(ecsDir, "rev-parse", `${ecsRev}^{commit}`).trim();
writeFileSync(
  join(out, `ecs-${ecsVersion}.json`),
  `${JSON.stringify({ source: `github.com/elastic/ecs generated/ecs/ecs_flat.yml at ${ecsCommit} (version ${ecsVersion}), field sets ${ECS_FIELD_SETS.join(", ")}`, version: ecsVersion, fields })}\n`,
);
console.log(`ocsf ${ocsfVersion}: ${Object.keys(classes).length} classes, ${Object.keys(objects).length} objects; ecs ${ecsVersion}: ${Object.keys(fields).length} fields`);
