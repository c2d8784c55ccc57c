// wrk (Debian's `wrk`, C + LuaJIT; bench/setup-peers.sh installs it) as the load client of the
// 304 bundle polls: the bench's Bun `fetch` client spends about as much CPU per poll as the
// control plane does, on the same 2 cores, so the poll rate it measures is mostly its own.
// Keep-alive connections, fixed headers; a Lua script counts every answer that is not a 304
// (wrk itself counts only non-2xx/3xx, so a 200 — the shortcut falling through — would pass).
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const SCRIPT = `
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) other = 0; first = 0 end
function response(status, headers, body)
  if status ~= 304 then
    other = other + 1
    if first == 0 then first = status end
  end
end
function done(summary, latency, requests)
  local n, f = 0, 0
  for _, t in ipairs(threads) do
    n = n + t:get("other")
    if f == 0 then f = t:get("first") end
  end
  local e = summary.errors
  io.write(string.format("SVC_WRK %d %d %d %d %d %d %d %d %d\\n", summary.requests, summary.duration, n, f, e.connect, e.read, e.write, e.status, e.timeout))
end
`;

export type WrkResult = { requests: number; rps: number; seconds: number; clientCpuS: number };

/** The wrk executable, or null when it is not installed (bench/setup-peers.sh installs it). */
export function wrkPath(): string | null {
  return Bun.which("wrk");
}

/**
 * Sends GETs to `url` with `headers` over `connections` keep-alive connections for `durationS`
 * seconds and throws unless every answer was a 304 and no socket error occurred. clientCpuS is
 * wrk's own CPU (user + system, all its threads).
 */
export async function wrkPolls(opts: { url: string; headers: Record<string, string>; connections: number; threads?: number; durationS: number }): Promise<WrkResult> {
  const wrk = wrkPath();
  if (!wrk) throw new Error("wrk is not installed: run bench/setup-peers.sh (apt-get install wrk)");
  const script = join(tmpdir(), `svc-bench-wrk-${process.pid}.lua`);
  writeFileSync(script, SCRIPT);
  const args = [wrk, "-t", String(opts.threads ?? 2), "-c", String(opts.connections), "-d", `${Math.max(1, Math.round(opts.durationS))}s`, "-s", script];
  for (const [k, v] of Object.entries(opts.headers)) args.push("-H", `${k}: ${v}`);
  args.push(opts.url);
  const p = Bun.spawn(args, { stdout: "pipe", stderr: "pipe" });
  const [out, err] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text()]);
  const code = await p.exited;
  const usage = p.resourceUsage();
  const line = /SVC_WRK (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+) (\d+)/.exec(out);
  if (code !== 0 || !line) throw new Error(`wrk exited ${code}: ${(out + err).slice(-1500)}`);
  const [requests, durationUs, other, first, connect, read, write, status, timeout] = line.slice(1).map(Number) as number[];
  if (other! > 0) throw new Error(`wrk: ${other} of ${requests} answers were not 304 (the first: ${first}); a 200 means the 304 shortcut fell through`);
  if (connect! + read! + write! + timeout! > 0) throw new Error(`wrk: socket errors (connect ${connect}, read ${read}, write ${write}, timeout ${timeout})`);
  if (status! > 0) throw new Error(`wrk: ${status} answers were not 2xx/3xx`);
  const seconds = durationUs! / 1e6;
  return { requests: requests!, rps: requests! / seconds, seconds, clientCpuS: usage ? Number(usage.cpuTime.user + usage.cpuTime.system) / 1e6 : Number.NaN };
}
