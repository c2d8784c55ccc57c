// Secrets the CLI takes on stdin, never as flags (a flag lands in shell history and `ps`): the
// API token of `svc login --with-token`, the provider's API key of `svc model-profiles create
// --auth-type api_key`, the sync app's client secret of `svc directory-sync set`. A terminal or
// an empty stdin where one is expected is a missing required input, so a usage error (exit 2),
// said the same way by all three: who reads what from stdin, and a command line that pipes it.
import { isatty } from "node:tty";
import { UsageError } from "../../command/index.ts";

export type StdinSecret = {
  /** Who reads it: "--with-token", "--auth-type api_key", "without --keep-secret it". */
  reader: string;
  /** "the API token" */
  what: string;
  /** A command line that pipes it in: `printf %s "$TOKEN" | svc login … --with-token`. */
  example: string;
};

/** "<reader> reads <what> from stdin, but stdin is <a terminal|empty>; pipe it in, e.g. `…`". Pure. */
export function stdinSecretProblem(s: StdinSecret, stdin: "terminal" | "empty"): string {
  const state = stdin === "terminal" ? "a terminal" : "empty";
  return `${s.reader} reads ${s.what} from stdin, but stdin is ${state}; pipe it in, e.g. \`${s.example}\``;
}

/** Refuses a terminal on stdin; checked before any call, since it needs no read. */
export function refuseTerminalStdin(s: StdinSecret): void {
  if (isatty(0)) throw new UsageError(stdinSecretProblem(s, "terminal"));
}

/** All of piped stdin; a terminal, or nothing but whitespace, is a usage error. */
export async function readStdinSecret(s: StdinSecret): Promise<string> {
  refuseTerminalStdin(s);
  const text = await Bun.stdin.text();
  if (!text.trim()) throw new UsageError(stdinSecretProblem(s, "empty"));
  return text;
}
