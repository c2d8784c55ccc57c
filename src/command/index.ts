// The one way every svc mode defines and runs a subcommand: citty's command definitions and
// --help rendering, our own strict argument parser (args.ts), examples in --help, and one
// mapping from errors to exit codes: 0 success, 1 failure, 2 usage (with the usage line).
import type { ArgsDef, CommandDef } from "citty";
import { renderUsage } from "citty";
import { UsageError, parseCommandArgs, usageLine } from "./args.ts";

export { type ParsedCommandArgs, UsageError, listFlag, parseCommandArgs, usageLine } from "./args.ts";

export const EXIT_OK = 0;
export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;

/** A failure the user can act on: one sentence on stderr, exit `exitCode` (default 1). */
export class CommandFailure extends Error {
  override name = "CommandFailure";
  constructor(
    message: string,
    readonly exitCode: number = EXIT_FAILURE,
    /** The stable code (the control plane's for its refusals); else read from the sentence's "(code)" ending. */
    readonly code?: string,
    /** The HTTP status when the control plane refused. */
    readonly status?: number,
  ) {
    super(message);
  }
}

/** The "(code)" a failure sentence ends with, if any. Pure. */
export function trailingCode(message: string): string | null {
  return /\(([a-z][a-z0-9_.]*)\)$/.exec(message.trim())?.[1] ?? null;
}

/**
 * How a failure reads under `--json`: one JSON object on stderr (stdout stays for data), with
 * the same code the API gives, so a script reads `.error.code` instead of parsing a sentence.
 */
export function jsonError(e: { message: string; code: string; exitCode: number; status?: number | undefined; usage?: string | undefined }): string {
  return JSON.stringify({ error: { code: e.code, message: e.message, exit_code: e.exitCode, ...(e.status ? { status: e.status } : {}), ...(e.usage ? { usage: e.usage } : {}) } });
}

export type SvcCommandDef<T extends ArgsDef = ArgsDef> = CommandDef<T> & {
  /** Shown under EXAMPLES in --help; every command (groups too) has at least one. */
  examples?: string[];
};

export function command<const T extends ArgsDef = ArgsDef>(def: SvcCommandDef<T>): SvcCommandDef<T> {
  return def;
}

type AnyCommand = SvcCommandDef<any>;

async function resolve<V>(v: V | Promise<V> | (() => V) | (() => Promise<V>) | undefined): Promise<V | undefined> {
  return typeof v === "function" ? await (v as () => V | Promise<V>)() : await v;
}

async function usageText(cmd: AnyCommand, path: string[]): Promise<string> {
  const meta = (await resolve(cmd.meta)) ?? {};
  const named: AnyCommand = { ...cmd, meta: { ...meta, name: path.join(" ") } };
  let text = await renderUsage(named);
  if (!process.stdout.isTTY) text = text.replace(/\u001b\[[0-9;]*m/g, "");
  text = text.replace(/[ \t]+$/gm, "");
  if (cmd.examples?.length) text += `\n\nEXAMPLES\n\n${cmd.examples.map((e) => `  ${e}`).join("\n")}`;
  return text;
}

/**
 * Walk the subcommand tree; returns the leaf, its name path and its own raw args. `at` follows
 * the walk, so a usage error names the group it happened in.
 */
async function findLeaf(root: AnyCommand, rawArgs: string[], at: { cmd: AnyCommand; path: string[] }) {
  let cmd = root;
  const path = at.path;
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
      const here = path.join(" ");
      if (name === undefined) throw new UsageError(`a command is needed: ${Object.keys(subs).join(", ")}; run "${here} <command> --help" for one of them`);
      throw new UsageError(`unknown command "${name}"; use one of: ${Object.keys(subs).join(", ")}`);
    }
    cmd = (await resolve(subs[name])) as AnyCommand;
    path.push(name);
    at.cmd = cmd;
    rest = [...rest.slice(0, idx), ...rest.slice(idx + 1)];
  }
  return { cmd, path, rest, group: false };
}

/** The usage line of a command, or of a group ("svc bot <init|list|…>"). */
async function synopsis(cmd: AnyCommand, path: string[]): Promise<string> {
  const subs = await resolve(cmd.subCommands);
  const own = usageLine(path.join(" "), ((await resolve(cmd.args)) ?? {}) as ArgsDef);
  if (!subs || Object.keys(subs).length === 0) return own;
  const group = `${path.join(" ")} <${Object.keys(subs).join("|")}> …`;
  return cmd.run ? `${group}  or  ${own}` : group;
}

/** One sentence for an error nobody anticipated, still saying what to do next. */
function unexpectedMessage(e: unknown): string {
  const err = e as NodeJS.ErrnoException | undefined;
  if (err?.code && err.path) return `cannot ${err.syscall ?? "use"} ${err.path} (${err.code}); check the path and its permissions and run the command again`;
  const text = (err?.message ?? String(e)).replace(/[.\s]+$/, "");
  return `unexpected error: ${text}; run the command again, and report it with the command line if it keeps happening`;
}

/**
 * Run a command tree with svc's exit-code contract: 0 success, 1 failure, 2 usage.
 * Returns the exit code instead of exiting so tests can call it.
 */
export async function runCommandTree(root: AnyCommand, rawArgs: string[], rootName = "svc"): Promise<number> {
  const at = { cmd: root, path: [rootName] };
  const path = at.path;
  // Errors as JSON when the command was asked for JSON (and knows the flag).
  const json = async () => rawArgs.includes("--json") && "json" in (((await resolve(at.cmd.args)) ?? {}) as ArgsDef);
  try {
    const found = await findLeaf(root, rawArgs, at);
    const leaf = found.cmd;
    const bare = found.path.length === 1 && rawArgs.length === 0 && !!(await resolve(root.subCommands));
    if (found.group || bare || found.rest.includes("--help") || found.rest.includes("-h")) {
      process.stdout.write(`${await usageText(leaf, path)}\n`);
      return EXIT_OK;
    }
    const argsDef = ((await resolve(leaf.args)) ?? {}) as ArgsDef;
    const args = parseCommandArgs(found.rest, argsDef, path.join(" "));
    await leaf.run?.({ rawArgs: found.rest, args: args as never, cmd: leaf });
    return EXIT_OK;
  } catch (e) {
    const asJson = await json().catch(() => false);
    if (e instanceof UsageError) {
      const line = await synopsis(at.cmd, path).catch(() => path.join(" "));
      const message = `${path.join(" ")}: ${e.message}${e.code ? ` (${e.code})` : ""}`;
      process.stderr.write(asJson ? `${jsonError({ message, code: e.code ?? "usage", exitCode: EXIT_USAGE, usage: line })}\n` : `${message}\nUsage: ${line}\n`);
      return EXIT_USAGE;
    }
    if (e instanceof CommandFailure) {
      const code = e.code ?? trailingCode(e.message) ?? "failed";
      process.stderr.write(asJson ? `${jsonError({ message: e.message, code, exitCode: e.exitCode, status: e.status })}\n` : `${e.message}\n`);
      return e.exitCode;
    }
    const message = `${path.join(" ")}: ${unexpectedMessage(e)}`;
    process.stderr.write(asJson ? `${jsonError({ message, code: "unexpected", exitCode: EXIT_FAILURE })}\n` : `${message}\n`);
    return EXIT_FAILURE;
  }
}
