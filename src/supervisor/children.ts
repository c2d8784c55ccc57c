// The supervisor's children: started with their output passed through (stderr also kept in
// a short tail, to explain a failure), or captured (the seed's report), and stopped with a
// signal then SIGKILL. Bun does not kill children when the parent dies (FACTS.md), so every
// child is stopped here. Each child runs in a session of its own: a Ctrl-C in the terminal
// that runs `svc run` then reaches svc run alone, which stops each child once, in order
// (sharing the terminal's process group, the front end would get the SIGINT too and then svc
// run's SIGTERM: two signals, and uvicorn quits without its graceful shutdown).
import { constants } from "node:os";
import { execa } from "execa";

const TAIL_LINES = 40;

export type Child = {
  name: string;
  pid: number;
  /** The exit code once the process is gone (128 + n when killed by signal n). */
  exited: Promise<number>;
  /** Once its stdout and stderr are read to the end (a grandchild may hold them open longer). */
  outputClosed: Promise<void>;
  hasExited(): boolean;
  tail(): string[];
  /** What the child wrote to stdout, when started with `stdout: "capture"`. */
  output(): string;
  signal(sig: NodeJS.Signals): void;
  /** `sig` (default SIGTERM), wait up to graceMs, then SIGKILL. Resolves with the exit code. */
  stop(graceMs: number, sig?: NodeJS.Signals): Promise<number>;
};

export type ChildOptions = {
  env: Record<string, string | undefined>;
  cwd?: string;
  /** "inherit" (default) passes stdout through; "capture" keeps it for output(). */
  stdout?: "inherit" | "capture";
  /** Pass stderr through to ours (default true); the tail is kept either way. */
  echoStderr?: boolean;
  tailLines?: number;
};

/** The shell's convention for a child killed by a signal: 128 + the signal's number. */
export function signalExitCode(signal: string | number | null | undefined): number {
  if (typeof signal === "number") return 128 + signal;
  const n = signal ? (constants.signals as Record<string, number>)[signal] : undefined;
  return 128 + (n ?? 0);
}

export const TIMEOUT = Symbol("timeout");

/** `p`, or TIMEOUT after `ms`; the timer is cleared either way (no timer outlives the wait). */
export async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | typeof TIMEOUT> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([p, new Promise<typeof TIMEOUT>((resolve) => (timer = setTimeout(() => resolve(TIMEOUT), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Start a child with execa: its exit (code, or the killing signal), stdout capture and the
 * stderr tee are execa's; the tail and the stop policy (signal, grace, SIGKILL) are ours.
 * execa's own clean-up on exit is off for detached children (they run in a session of their
 * own), so the supervisor still stops each child itself.
 */
export function startChild(name: string, argv: string[], opts: ChildOptions): Child {
  const lines: string[] = [];
  const maxLines = opts.tailLines ?? TAIL_LINES;
  const capture = opts.stdout === "capture";
  let done = false;
  const [file, ...args] = argv;
  const proc = execa(file ?? "", args, {
    env: opts.env,
    extendEnv: false,
    cwd: opts.cwd,
    stdin: "ignore",
    stdout: capture ? "pipe" : "inherit",
    stderr: opts.echoStderr === false ? "pipe" : ["pipe", "inherit"],
    buffer: { stdout: capture, stderr: false },
    stripFinalNewline: false,
    detached: true,
    reject: false,
    forceKillAfterDelay: false, // stop() decides the grace per call
  });
  // A command that cannot be started fails here, as Bun.spawn did (no pid to supervise).
  if (proc.pid === undefined) {
    void proc.catch(() => {});
    throw new Error(`${name}: ${file ?? "(no command)"} could not be started`);
  }
  const pid = proc.pid;
  const stderrDone = (async () => {
    for await (const line of proc.iterable({ from: "stderr" })) {
      if (line.trim()) lines.push(line);
      if (lines.length > maxLines) lines.splice(0, lines.length - maxLines);
    }
  })();
  // The process's own end, not execa's result: that waits for the output to close too, which a
  // grandchild holding stderr may put off long after the child is gone.
  const exited = new Promise<number>((resolve) => {
    proc.nodeChildProcess.once("exit", (code, signal) => {
      done = true;
      resolve(signal ? signalExitCode(signal) : (code ?? 1));
    });
  });
  let captured = "";
  const result = proc.then((r) => {
    if (capture && typeof r.stdout === "string") captured = r.stdout;
  });
  const outputClosed = Promise.all([stderrDone.catch(() => {}), result.catch(() => {})]).then(() => {});
  return {
    name,
    pid,
    exited,
    outputClosed,
    hasExited: () => done,
    tail: () => [...lines],
    output: () => captured,
    signal(sig) {
      if (!done) proc.kill(sig);
    },
    async stop(graceMs, sig = "SIGTERM") {
      if (done) return exited;
      this.signal(sig);
      if ((await withTimeout(exited, graceMs)) === TIMEOUT && !done) this.signal("SIGKILL");
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
