// A command run on a pseudo-terminal (test/support/terminal.py), as a person runs it in a
// terminal: `ctrlC()` types a Ctrl-C, which the terminal turns into SIGINT for the whole
// foreground process group (every process of a `… | tee log` pipeline too), not a signal sent
// to one chosen process. `screen()` is what the terminal has shown so far.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO, waitFor } from "./controlplane-process.ts";

export type Terminal = {
  screen: () => string;
  ctrlC: () => void;
  /** Resolves once the terminal shows `text`; fails early if the command ends first. */
  shows: (text: string, timeoutMs: number) => Promise<void>;
  exited: Promise<number>;
  proc: ReturnType<typeof Bun.spawn>;
};

export function onTerminal(shellCommand: string, opts: { cwd?: string; env?: Record<string, string | undefined> } = {}): Terminal {
  const proc = Bun.spawn(["python3", join(REPO, "test/support/terminal.py"), shellCommand], {
    cwd: opts.cwd ?? REPO,
    env: opts.env ?? process.env,
    stdin: "pipe",
    stdout: "pipe",
    stderr: "inherit",
  });
  let text = "";
  const reading = (async () => {
    const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader();
    const dec = new TextDecoder();
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += dec.decode(r.value, { stream: true });
  })();
  const exited = proc.exited.then(async (code) => (await reading, code));
  return {
    proc,
    screen: () => text,
    ctrlC: () => {
      void (proc.stdin as import("bun").FileSink).write("ctrl-c\n");
      void (proc.stdin as import("bun").FileSink).flush();
    },
    exited,
    shows: async (wanted, timeoutMs) =>
      waitFor(
        () => {
          if (text.includes(wanted)) return true;
          if (proc.exitCode !== null) throw new Error(`the command ended (${proc.exitCode}) before the terminal showed ${JSON.stringify(wanted)}:\n${text}`);
          return false;
        },
        `the terminal to show ${JSON.stringify(wanted)}`,
        timeoutMs,
      ),
  };
}

/** Pids of processes whose environment holds `marker` (e.g. `SVC_LOCAL_DIR=<dir>`): what a run left behind. */
export function processesWithEnv(marker: string): number[] {
  const found: number[] = [];
  for (const entry of new Bun.Glob("[0-9]*").scanSync({ cwd: "/proc", onlyFiles: false })) {
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      const env = readFileSync(`/proc/${pid}/environ`, "latin1");
      if (env.split("\0").includes(marker)) found.push(pid);
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

/** True when something accepts connections on 127.0.0.1:port. */
export async function listening(port: number): Promise<boolean> {
  try {
    const s = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
    s.end();
    return true;
  } catch {
    return false;
  }
}
