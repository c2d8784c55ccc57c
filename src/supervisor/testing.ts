// Test helpers for the supervisor's unit tests: a child that records the signals it gets,
// and polling without timing assertions.
import { existsSync, readFileSync } from "node:fs";
import { type Child, startChild } from "./children.ts";

/** The lines of a file, [] while it does not exist. */
export function lines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, "utf8").split("\n").filter(Boolean) : [];
}

/** Poll until `check` holds (bounded so a broken test fails instead of hanging). */
export async function waitUntil(check: () => boolean | Promise<boolean>, what = "the condition", boundMs = 30_000): Promise<void> {
  const end = Date.now() + boundMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await Bun.sleep(20);
  }
}

/**
 * A shell child that appends "<name> ready" to `log` once its traps are set, then
 * "<name> SIGTERM" / "<name> SIGINT" when it gets one and exits 0 (or ignores both; or,
 * `linger`, records each and keeps running, as a child slow to stop would).
 */
export function idleChild(name: string, log: string, cwd: string, opts: { ignore?: boolean; linger?: boolean; start?: typeof startChild } = {}): Child {
  const then = opts.linger ? "" : "; exit 0";
  const traps = opts.ignore ? `trap '' TERM INT` : `trap 'echo "$NAME SIGTERM" >> "$LOG"${then}' TERM; trap 'echo "$NAME SIGINT" >> "$LOG"${then}' INT`;
  const script = `${traps}; echo "$NAME ready" >> "$LOG"; while :; do sleep 1 & wait $!; done`;
  return (opts.start ?? startChild)(name, ["sh", "-c", script], { env: { PATH: process.env.PATH, NAME: name, LOG: log }, cwd });
}
