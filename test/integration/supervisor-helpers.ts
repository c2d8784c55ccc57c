// Helpers of the supervisor tests: run a command as the container user (UID 10001) and read
// its stderr while it runs.
import { chownSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { collectOutput } from "../support/controlplane-process.ts";

export const AS_CONTAINER_USER = ["setpriv", "--reuid=10001", "--regid=10001", "--clear-groups"];

/** A temp dir owned by UID/GID 10001 (the container's state volume). */
export function stateDir(prefix = "svc-state-"): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  chownSync(d, 10001, 10001);
  return d;
}

export type Running = { proc: Subprocess; stderr: () => string; exit: Promise<number> };

export function spawnCollect(argv: string[], env: Record<string, string | undefined>): Running {
  const proc = Bun.spawn(argv, { env, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  const output = collectOutput(proc);
  return { proc, stderr: output.text, exit: proc.exited.then(async (c) => (await output.closed, c)) };
}

export { alive } from "../support/processes.ts";

/** Lines of the supervisor's stderr that are not JSON log lines (the refusal line). */
export function plainLines(text: string): string[] {
  return text.split("\n").filter((l) => l.trim() && !l.startsWith("{"));
}

/** The `event` of every JSON log line on stderr. */
export function events(text: string): string[] {
  return text
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => {
      try {
        return String((JSON.parse(l) as { event?: unknown }).event ?? "");
      } catch {
        return "";
      }
    });
}
