// Strict parsing of a leaf command's own arguments, and its one-line usage. citty's parser
// accepts "--json=maybe" as true, takes the next flag as a value, lets a repeated flag silently
// win and splits "-json" into -j -s -o -n; here each of those is a UsageError (exit 2) that
// names the flag and says what to write instead. Pure.
import type { ArgDef, ArgsDef } from "citty";

/**
 * A mistake in how the command was called (unknown flag, missing flag, bad value): printed as
 * one sentence saying what to write instead, with the stable `code` when one applies, then the
 * command's usage line; exit 2.
 */
export class UsageError extends Error {
  override name = "UsageError";
  constructor(
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

function camel(s: string): string {
  return s.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}
function kebab(s: string): string {
  return s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

type FlagEntry = { name: string; def: ArgDef };

/** Every spelling of every flag (name, camelCase, kebab-case, aliases) → its definition. */
function flagTable(args: ArgsDef): Map<string, FlagEntry> {
  const table = new Map<string, FlagEntry>();
  for (const [name, def] of Object.entries(args)) {
    if (def.type === "positional") continue;
    const alias = (def as { alias?: string | string[] }).alias;
    const aliases = alias === undefined ? [] : Array.isArray(alias) ? alias : [alias];
    for (const n of [name, camel(name), kebab(name), ...aliases]) table.set(n, { name, def });
  }
  return table;
}

function flagHint(name: string, def: ArgDef): string {
  if (def.type === "boolean") return `--${name}`;
  const hint = (def as { valueHint?: string }).valueHint || ((def as { options?: string[] }).options ?? []).join("|") || name;
  // Booleans spelled out as values (directory-sync's --dry-run=<true|false>) read best with "=".
  return hint === "true|false" ? `--${name}=<${hint}>` : `--${name} <${hint}>`;
}

function positionalHint(name: string, def: ArgDef): string {
  return `<${(def as { valueHint?: string }).valueHint ?? name}>`;
}

/** The one-line synopsis printed under a usage error, e.g. "svc bot status --installation <installation_id> [--json]". Pure. */
export function usageLine(path: string, args: ArgsDef): string {
  const parts = [path];
  const entries = Object.entries(args);
  for (const [name, def] of entries) {
    if (def.type !== "positional") continue;
    parts.push(def.required === false ? `[${positionalHint(name, def)}]` : positionalHint(name, def));
  }
  for (const [name, def] of entries) if (def.type !== "positional" && def.required) parts.push(flagHint(name, def));
  for (const [name, def] of entries) {
    if (def.type === "positional" || def.required) continue;
    parts.push(def.type === "boolean" && def.default === true ? `[--no-${name}]` : `[${flagHint(name, def)}]`);
  }
  return parts.join(" ");
}

/**
 * A comma-separated list flag ("--models a,b") as its items, trimmed. An empty list ("--models ,")
 * or an empty item ("a,,b", "a,") is a usage error naming the flag, never silently dropped: the
 * admin meant something there. Repeats are kept once. `example` is a good value. Pure.
 */
export function listFlag(name: string, value: string, example: string): string[] {
  const items = value.split(",").map((x) => x.trim());
  const fix = `write --${name} as a comma-separated list, e.g. --${name} ${example}`;
  if (items.every((x) => x === "")) throw new UsageError(`--${name} "${value}" lists nothing; ${fix}`);
  if (items.includes("")) throw new UsageError(`--${name} "${value}" has an empty item (two commas in a row, or one at an end); ${fix}`);
  return [...new Set(items)];
}

export type ParsedCommandArgs = Record<string, unknown> & { _: string[] };

/**
 * Parses a leaf command's own arguments strictly: unknown flags, flags given twice, a value
 * flag without a value (or followed by another flag), an empty value, a value on a boolean
 * flag other than true/false, a missing required flag or argument, and a surplus argument are
 * all usage errors that name the flag and say what to write instead. `path` is the command
 * ("svc bot list"), used in the messages. Pure.
 */
export function parseCommandArgs(rawArgs: readonly string[], args: ArgsDef, path: string): ParsedCommandArgs {
  const flags = flagTable(args);
  const positionalDefs = Object.entries(args).filter(([, d]) => d.type === "positional");
  const out: ParsedCommandArgs = { _: [] };
  const given = new Set<string>();
  const helpHint = `run "${path} --help" to see the flags it takes`;
  for (let i = 0; i < rawArgs.length; i++) {
    const tok = rawArgs[i]!;
    if (tok === "--") {
      out._.push(...rawArgs.slice(i + 1));
      break;
    }
    if (tok === "-" || !tok.startsWith("-")) {
      out._.push(tok);
      continue;
    }
    let spelled: string;
    let inline: string | undefined;
    if (tok.startsWith("--")) {
      const eq = tok.indexOf("=");
      spelled = eq < 0 ? tok.slice(2) : tok.slice(2, eq);
      inline = eq < 0 ? undefined : tok.slice(eq + 1);
    } else {
      // Single-dash flags are only one-letter aliases: "-json" is not "--json".
      spelled = tok.slice(1);
      if (spelled.length !== 1 || !flags.has(spelled)) throw new UsageError(`unknown flag "${tok}"; flags take two dashes, e.g. -${tok}, and ${helpHint}`);
    }
    let entry = flags.get(spelled);
    let negated = false;
    if (!entry && spelled.startsWith("no-")) {
      const positive = flags.get(spelled.slice(3));
      if (positive?.def.type === "boolean") {
        entry = positive;
        negated = true;
      }
    }
    if (!entry) throw new UsageError(`unknown flag "--${spelled}"; ${helpHint}`);
    const { name, def } = entry;
    if (given.has(name)) throw new UsageError(`--${name} is given more than once; pass it once`);
    given.add(name);
    if (def.type === "boolean") {
      if (inline === undefined) out[name] = !negated;
      else if (negated) throw new UsageError(`--no-${name} takes no value; write --no-${name} alone`);
      else if (inline === "true" || inline === "false") out[name] = inline === "true";
      else throw new UsageError(`--${name} takes no value, not "${inline}"; write --${name} alone (or --${name}=true / --${name}=false)`);
      continue;
    }
    let value = inline;
    if (value === undefined) {
      const next = rawArgs[i + 1];
      if (next === undefined || (next.startsWith("-") && next !== "-")) {
        const dash = next === undefined ? "" : ` (for a value that starts with "-", write --${name}=<value>)`;
        throw new UsageError(`--${name} needs a value; write ${flagHint(name, def)}${dash}`);
      }
      value = next;
      i++;
    }
    if (value === "") throw new UsageError(`--${name} is empty; write ${flagHint(name, def)}`);
    const options = (def as { options?: string[] }).options;
    if (def.type === "enum" && options && !options.includes(value)) {
      throw new UsageError(`--${name} must be ${options.map((o) => `"${o}"`).join(" or ")}, not "${value}"`);
    }
    out[name] = value;
  }
  if (out._.length > positionalDefs.length) {
    const extra = out._[positionalDefs.length]!;
    const what = positionalDefs.length === 0 ? "it takes no arguments" : `it takes ${positionalDefs.map(([n, d]) => positionalHint(n, d)).join(" ")} only`;
    throw new UsageError(`unexpected argument "${extra}" (${what}); quote a value that contains spaces, or ${helpHint}`);
  }
  positionalDefs.forEach(([name], idx) => {
    if (out._[idx] !== undefined) out[name] = out._[idx];
  });
  const missing = Object.entries(args).filter(([name, d]) => out[name] === undefined && (d.type === "positional" ? d.required !== false : d.required === true));
  if (missing.length > 0) {
    const list = (xs: string[]) => (xs.length === 1 ? xs[0]! : `${xs.slice(0, -1).join(", ")} and ${xs.at(-1)}`);
    const argsMissing = missing.filter(([, d]) => d.type === "positional").map(([n, d]) => positionalHint(n, d));
    const flagsMissing = missing.filter(([, d]) => d.type !== "positional").map(([n, d]) => flagHint(n, d));
    const parts = [
      ...(argsMissing.length ? [`argument${argsMissing.length > 1 ? "s" : ""} ${list(argsMissing)}`] : []),
      ...(flagsMissing.length ? [`flag${flagsMissing.length > 1 ? "s" : ""} ${list(flagsMissing)}`] : []),
    ];
    throw new UsageError(`missing required ${parts.join(" and ")}; add ${missing.length === 1 ? "it" : "them"} and run the command again`);
  }
  for (const [name, d] of Object.entries(args)) {
    if (out[name] === undefined && d.default !== undefined) out[name] = d.default;
  }
  for (const name of Object.keys(args)) if (out[name] !== undefined && camel(name) !== name) out[camel(name)] = out[name];
  return out;
}
