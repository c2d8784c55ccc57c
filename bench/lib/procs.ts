// Child processes of the runner: JSON-printing load clients, and /proc readings (RSS, CPU).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { LoadResult, LoadSpec } from "../load/http-load.ts";

export async function runJson<T>(cmd: string[], env: Record<string, string> = {}): Promise<T> {
  const p = Bun.spawn(cmd, { env: { ...process.env, ...env } as Record<string, string>, stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  const code = await p.exited;
  if (code !== 0) throw new Error(`${cmd.slice(0, 2).join(" ")} exited ${code}: ${err.slice(-1500)}`);
  return JSON.parse(out.trim().split("\n").at(-1)!) as T;
}

export async function httpLoad(spec: LoadSpec): Promise<LoadResult> {
  return runJson<LoadResult>(["bun", join(import.meta.dir, "../load/http-load.ts"), JSON.stringify(spec)]);
}

export type DecideLoad = { count: number; errors: number; error_kinds: string[]; rps: number; p50_ms: number; p90_ms: number; p99_ms: number; max_ms: number; answers: Record<string, number> };

export async function decideLoad(args: string[], token: string): Promise<DecideLoad> {
  return runJson<DecideLoad>(["python3", join(import.meta.dir, "../load/decide_load.py"), ...args], { SVC_RUNTIME_TOKEN: token });
}

/** Resident set size of a process, in MB. */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

/** Samples the RSS of a process every 100 ms until stopped; returns the peak. */
export function rssPeak(pid: number): { stop(): number } {
  let peak = rssMb(pid);
  const timer = setInterval(() => {
    try {
      peak = Math.max(peak, rssMb(pid));
    } catch {}
  }, 100);
  return {
    stop() {
      clearInterval(timer);
      return peak;
    },
  };
}

/** CPU seconds (user + system, all threads) a process has used so far (/proc/<pid>/stat, clock ticks of 10 ms). */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}
