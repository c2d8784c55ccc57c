// The one way every svc mode defines and runs a subcommand: citty for parsing, plus the
// strictness citty lacks (unknown flags and missing arguments are usage errors, exit 2),
// examples in --help, and one mapping from errors to exit codes.
import { type ArgsDef, type CommandDef, parseArgs, renderUsage } from "citty";

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** A mistake in how the command was called: printed with a hint, exit 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** A failure the user can act on: one sentence on stderr, exit `exitCode` (default 1). */
export class CommandFailure extends Error {
  override name = "CommandFailure";
  constructor(
    message: string,
    readonly exitCode: number = EXIT_FAILURE,
  ) {
    super(message);
  }
}

export type SvcCommandDef<T extends ArgsDef = ArgsDef> = CommandDef<T> & {
  /** Shown under EXAMPLES in --help; every leaf command has at least one. */
  examples?: string[];
};

export function command<const T extends ArgsDef = ArgsDef>(def: SvcCommandDef<T>): SvcCommandDef<T> {
  return def;
}

type AnyCommand = SvcCommandDef<any>;

async function resolve<V>(v: V | Promise<V> | (() => V) | (() => Promise<V>) | undefined): Promise<V | undefined> {
  return typeof v === "function" ? await (v as () => V | Promise<V>)() : await v;
}

function camel(s: string): string {
  return s.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}
function kebab(s: string): string {
  return s.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
}

/** Flag names a command accepts, in every spelling citty would accept them. */
function knownFlags(args: ArgsDef): { names: Set<string>; valueFlags: Set<string> } {
  const names = new Set<string>(["help", "h"]);
  const valueFlags = new Set<string>();
  for (const [name, def] of Object.entries(args)) {
    if (def.type === "positional") continue;
    const alias = (def as { alias?: string | string[] }).alias;
    const aliases = alias === undefined ? [] : Array.isArray(alias) ? alias : [alias];
    for (const n of [name, camel(name), kebab(name), ...aliases]) {
      names.add(n);
      if (def.type === "string" || def.type === "enum") valueFlags.add(n);
    }
  }
  return { names, valueFlags };
}

function checkFlags(rawArgs: string[], args: ArgsDef): void {
  const { names, valueFlags } = knownFlags(args);
  const positionals = Object.values(args).filter((d) => d.type === "positional").length;
  let seenPositionals = 0;
  for (let i = 0; i < rawArgs.length; i++) {
    const tok = rawArgs[i]!;
    if (tok === "--") break;
    if (!tok.startsWith("-") || tok === "-") {
      seenPositionals++;
      if (seenPositionals > positionals) throw new UsageError(`unexpected argument "${tok}"`);
      continue;
    }
    const bare = tok.replace(/^--?/, "").split("=")[0]!;
    const name = names.has(bare) ? bare : bare.startsWith("no-") ? bare.slice(3) : bare;
    if (!names.has(name)) throw new UsageError(`unknown flag "${tok.split("=")[0]}"`);
    if (valueFlags.has(name) && !tok.includes("=")) {
      const next = rawArgs[i + 1];
      if (next === undefined) throw new UsageError(`flag "${tok}" needs a value`);
      i++;
    }
  }
}

async function usageText(cmd: AnyCommand, path: string[]): Promise<string> {
  const meta = (await resolve(cmd.meta)) ?? {};
  const named: AnyCommand = { ...cmd, meta: { ...meta, name: path.join(" ") } };
  let text = await renderUsage(named);
  if (!process.stdout.isTTY) text = text.replace(/\u001b\[[0-9;]*m/g, "");
  if (cmd.examples?.length) text += `\n\nEXAMPLES\n\n${cmd.examples.map((e) => `  ${e}`).join("\n")}`;
  return text;
}

/** Walk the subcommand tree; returns the leaf, its name path and its own raw args. */
async function findLeaf(root: AnyCommand, rawArgs: string[], rootName: string) {
  let cmd = root;
  const path = [rootName];
  let rest = rawArgs;
  for (;;) {
    const subs = await resolve(cmd.subCommands);
    if (!subs || Object.keys(subs).length === 0) break;
    const idx = rest.findIndex((a) => !a.startsWith("-"));
    const name = idx >= 0 ? rest[idx]! : undefined;
    if (name === undefined || !(name in subs)) {
      const hasPositionals = Object.values(((await resolve(cmd.args)) ?? {}) as ArgsDef).some((d) => d.type === "positional");
      if (cmd.run && (name === undefined || hasPositionals)) break;
      if (rest.some((a) => a === "--help" || a === "-h")) return { cmd, path, rest, group: true };
      if (name === undefined) throw new UsageError(`"${path.join(" ")}" needs a command: ${Object.keys(subs).join(", ")}`);
      throw new UsageError(`unknown command "${name}" for "${path.join(" ")}"`);
    }
    cmd = (await resolve(subs[name])) as AnyCommand;
    path.push(name);
    rest = [...rest.slice(0, idx), ...rest.slice(idx + 1)];
  }
  return { cmd, path, rest, group: false };
}

/**
 * Run a command tree with svc's exit-code contract: 0 success, 1 failure, 2 usage.
 * Returns the exit code instead of exiting so tests can call it.
 */
export async function runCommandTree(root: AnyCommand, rawArgs: string[], rootName = "svc"): Promise<number> {
  let path = [rootName];
  let leaf: AnyCommand = root;
  try {
    const found = await findLeaf(root, rawArgs, rootName);
    path = found.path;
    leaf = found.cmd;
    if (found.group || found.rest.includes("--help") || found.rest.includes("-h")) {
      process.stdout.write(`${await usageText(leaf, path)}\n`);
      return EXIT_OK;
    }
    const argsDef = ((await resolve(leaf.args)) ?? {}) as ArgsDef;
    checkFlags(found.rest, argsDef);
    let args;
    try {
      args = parseArgs(found.rest, argsDef);
    } catch (e) {
      throw new UsageError((e as Error).message.replace(/\u001b\[[0-9;]*m/g, ""));
    }
    await leaf.run?.({ rawArgs: found.rest, args: args as never, cmd: leaf });
    return EXIT_OK;
  } catch (e) {
    if (e instanceof UsageError) {
      process.stderr.write(`${path.join(" ")}: ${e.message}. Run "${path.join(" ")} --help" for usage.\n`);
      return EXIT_USAGE;
    }
    if (e instanceof CommandFailure) {
      process.stderr.write(`${e.message}\n`);
      return e.exitCode;
    }
    process.stderr.write(`${path.join(" ")}: ${(e as Error)?.message ?? String(e)}\n`);
    return EXIT_FAILURE;
  }
}
