// The supervisor's children: started with their output passed through (the proxy's stderr
// also kept in a short tail, to explain a failed bootstrap), stopped with SIGTERM then SIGKILL.
// Bun does not kill children when the parent dies (FACTS.md), so every child is stopped here.
import type { Subprocess } from "bun";

const TAIL_LINES = 40;

export type Child = {
  name: string;
  pid: number;
  exited: Promise<number>;
  hasExited(): boolean;
  tail(): string[];
  signal(sig: NodeJS.Signals): void;
  /** SIGTERM, wait up to graceMs, then SIGKILL. Resolves with the exit code. */
  stop(graceMs: number): Promise<number>;
};

export function startChild(name: string, argv: string[], opts: { env: Record<string, string | undefined>; cwd?: string }): Child {
  const lines: string[] = [];
  let done = false;
  const proc: Subprocess<"ignore", "inherit", "pipe"> = Bun.spawn(argv, {
    env: opts.env,
    cwd: opts.cwd,
    stdin: "ignore",
    stdout: "inherit",
    stderr: "pipe",
  });
  void (async () => {
    const reader = proc.stderr.getReader();
    const decoder = new TextDecoder();
    let partial = "";
    for (;;) {
      const { done: end, value } = await reader.read();
      if (end) break;
      process.stderr.write(value);
      partial += decoder.decode(value, { stream: true });
      const parts = partial.split("\n");
      partial = parts.pop() ?? "";
      for (const l of parts) if (l.trim()) lines.push(l);
      if (lines.length > TAIL_LINES) lines.splice(0, lines.length - TAIL_LINES);
    }
    if (partial.trim()) lines.push(partial);
  })();
  const exited = proc.exited.then((code) => {
    done = true;
    return code ?? (proc.signalCode ? 128 : 1);
  });
  return {
    name,
    pid: proc.pid,
    exited,
    hasExited: () => done,
    tail: () => [...lines],
    signal(sig) {
      if (!done) proc.kill(sig);
    },
    async stop(graceMs) {
      if (done) return exited;
      proc.kill("SIGTERM");
      const timer = Bun.sleep(graceMs).then(() => "timeout" as const);
      if ((await Promise.race([exited, timer])) === "timeout" && !done) proc.kill("SIGKILL");
      return exited;
    },
  };
}

/** The most telling line of a child's stderr tail: a JSON log line's error/message, or the text. */
export function causeFromTail(tail: string[]): string | undefined {
  for (const line of [...tail].reverse()) {
    try {
      const doc = JSON.parse(line) as Record<string, unknown>;
      if (doc && typeof doc === "object") {
        const level = String(doc.level ?? "");
        if (level && level !== "error" && level !== "fatal") continue;
        const parts = [doc.event, doc.error ?? doc.message ?? doc.detail ?? doc.cause].filter((p) => typeof p === "string" && p);
        if (parts.length) return parts.join(": ");
      }
    } catch {
      return line.trim();
    }
  }
  return undefined;
}
