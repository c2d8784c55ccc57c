// Issue 34: the time an MCP gateway adds to a tools/call on a stdio server, svc beside the bare
// bridge `mcp-proxy` (PyPI, no decision and no audit; installed by bench/setup-peers.sh). One
// upstream kind, server-everything's `echo` over stdio, reached three ways with the official
// TypeScript SDK client: directly (the client spawns the server), through mcp-proxy (Streamable
// HTTP on loopback, it spawns its own server) and through svc's gateway (a process of its own,
// bench/load/mcp-gateway-host.ts: decided, the arguments sealed to one age recipient, the
// decision record fsynced before the upstream call, the outcome after). Sequential calls are
// interleaved call by call so all three see the same load; at concurrency 8 the paths take
// turns in blocks (8 sessions on a bridge, 8 calls in flight on the direct client).
//   bun bench/mcp-gateway.ts --stdio [--calls N] [--prof DIR]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { join } from "node:path";
import { EVERYTHING_JS } from "../../test/support/mcp/servers.ts";
import type { Suite } from "../lib/context.ts";
import { type Metric, type Target, metric } from "../lib/report.ts";
import { summarize } from "../lib/stats.ts";

const PEERS = process.env.SVC_BENCH_PEERS ?? "/var/cache/svc/bench-peers";
export const MCP_PROXY_BIN = join(PEERS, "mcp-proxy-0.13.0/bin/mcp-proxy");
const SERVER = [process.execPath, EVERYTHING_JS, "stdio"];

type Summary = ReturnType<typeof summarize>;
type Quantile = "p50" | "p99";
const QUANTILES: readonly Quantile[] = ["p50", "p99"];
type Path = { name: string; clients: Client[]; tool: string };
export type McpStdioResult = {
  calls: number;
  seq: Record<string, Summary>;
  c8: Record<string, Summary>;
  note: string[];
};

async function httpClients(url: string, n: number, headers: Record<string, string> = {}): Promise<Client[]> {
  const out: Client[] = [];
  for (let i = 0; i < n; i++) {
    const c = new Client({ name: "bench", version: "1" });
    await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
    out.push(c);
  }
  return out;
}

async function firstLine(p: Bun.Subprocess<"pipe", "pipe", "inherit">): Promise<string> {
  const reader = p.stdout.getReader();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`the gateway host exited before it was ready: ${text}`);
    text += new TextDecoder().decode(value);
    const nl = text.indexOf("\n");
    if (nl >= 0) {
      reader.releaseLock();
      return text.slice(0, nl);
    }
  }
}

async function waitHttp(url: string, proc: Bun.Subprocess, what: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${what} exited with ${proc.exitCode}`);
    const up = await fetch(url, { method: "GET", signal: AbortSignal.timeout(1000) }).then(
      () => true,
      () => false,
    );
    if (up) return;
    if (Date.now() > deadline) throw new Error(`${what} did not answer within 30 s`);
    await Bun.sleep(100);
  }
}

const freePort = () => {
  const s = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const p = s.port;
  s.stop(true);
  return p;
};

/** Starts the three paths, measures `calls` sequential calls each (interleaved) and `calls` at c=8 each, tears down. */
export async function measureMcpStdio(calls: number, o: { prof?: string; warmup?: number } = {}): Promise<McpStdioResult> {
  const warmup = o.warmup ?? 50;
  const note: string[] = [];
  const procs: Bun.Subprocess[] = [];
  const clients: Client[] = [];
  const paths: Path[] = [];
  try {
    const host = Bun.spawn([process.execPath, ...(o.prof ? ["--cpu-prof", `--cpu-prof-dir=${o.prof}`] : []), join(import.meta.dir, "../load/mcp-gateway-host.ts"), "everything", ...SERVER], {
      stdin: "pipe",
      stdout: "pipe",
      stderr: "inherit",
    });
    procs.push(host);
    const { url, jwt } = JSON.parse(await firstLine(host)) as { url: string; jwt: string };

    const direct = new Client({ name: "bench", version: "1" });
    await direct.connect(new StdioClientTransport({ command: SERVER[0]!, args: SERVER.slice(1), stderr: "ignore" }));
    clients.push(direct);
    paths.push({ name: "direct", clients: Array(8).fill(direct), tool: "echo" });

    if (await Bun.file(MCP_PROXY_BIN).exists()) {
      const port = freePort();
      const mp = Bun.spawn([MCP_PROXY_BIN, "--port", String(port), "--log-level", "WARNING", ...SERVER], { stdout: "ignore", stderr: "ignore" });
      procs.push(mp);
      await waitHttp(`http://127.0.0.1:${port}/status`, mp, "mcp-proxy");
      const cs = await httpClients(`http://127.0.0.1:${port}/mcp`, 8);
      clients.push(...cs);
      paths.push({ name: "mcp-proxy", clients: cs, tool: "echo" });
    } else note.push(`mcp-proxy skipped: ${MCP_PROXY_BIN} missing (bash bench/setup-peers.sh)`);

    const svc = await httpClients(url, 8, { authorization: `Bearer ${jwt}` });
    clients.push(...svc);
    paths.push({ name: "svc", clients: svc, tool: "everything.echo" });

    const once = async (p: Path, i: number, k = 0): Promise<number> => {
      const t = performance.now();
      const r = await p.clients[k]!.callTool({ name: p.tool, arguments: { message: `m${i}` } });
      if (r.isError) throw new Error(`${p.name}: ${JSON.stringify(r.content).slice(0, 300)}`);
      return performance.now() - t;
    };
    const seq: Record<string, number[]> = Object.fromEntries(paths.map((p) => [p.name, []]));
    for (let i = 0; i < warmup + calls; i++) {
      for (const p of paths) {
        const ms = await once(p, i);
        if (i >= warmup) seq[p.name]!.push(ms);
      }
    }
    // Concurrency 8: each path in turn, in 4 blocks, so load drifts reach every path alike.
    const c8: Record<string, number[]> = Object.fromEntries(paths.map((p) => [p.name, []]));
    const per = Math.max(1, Math.ceil(calls / 8 / 4));
    for (let block = 0; block < 4; block++) {
      for (const p of paths) {
        await Promise.all(
          Array.from({ length: 8 }, async (_, k) => {
            for (let j = 0; j < per; j++) c8[p.name]!.push(await once(p, j, k));
          }),
        );
      }
    }
    const sum = (m: Record<string, number[]>) => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, summarize(v)]));
    return { calls, seq: sum(seq), c8: sum(c8), note };
  } finally {
    for (const c of new Set(clients)) await c.close().catch(() => {});
    for (const p of procs) {
      if (p.stdin && typeof p.stdin !== "number") (p.stdin as { end(): void }).end();
      else p.kill();
    }
    await Promise.race([Promise.all(procs.map(async (p) => p.exited)), Bun.sleep(5000)]);
    for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
  }
}

/** Issue 34's MCP targets as metrics, one value per run. */
export function mcpStdioMetrics(runs: McpStdioResult[]): Metric[] {
  const m = (name: string, unit: string, f: (r: McpStdioResult) => number, target?: Target, note?: string) => metric("mcp stdio", name, unit, runs.map(f), target, note);
  const added = (r: McpStdioResult, path: string, q: Quantile) => (r.seq[path]?.[q] ?? Number.NaN) - r.seq.direct![q];
  const hasPeer = runs.every((r) => r.seq["mcp-proxy"]);
  const out: Metric[] = [
    ...QUANTILES.map((q) => m(`tools/call ${q}, directly (stdio)`, "ms", (r) => r.seq.direct![q])),
    m("added by svc, p50 (sequential)", "ms", (r) => added(r, "svc", "p50"), { op: "<=", value: 1.5 }, "decided, sealed, the decision record fsynced before the upstream"),
    m("added by svc, p99 (sequential)", "ms", (r) => added(r, "svc", "p99"), { op: "<=", value: 5 }),
  ];
  if (!hasPeer) return [...out, metric("mcp stdio", "mcp-proxy 0.13 (bare bridge)", "", [Number.NaN], undefined, runs[0]?.note.join("; "))];
  return [
    ...out,
    m("added by mcp-proxy 0.13, p50 (sequential)", "ms", (r) => added(r, "mcp-proxy", "p50"), undefined, "peer: no decision, no audit"),
    m("added by mcp-proxy 0.13, p99 (sequential)", "ms", (r) => added(r, "mcp-proxy", "p99"), undefined, "peer"),
    ...QUANTILES.map((q) => m(`added ${q}, svc / mcp-proxy`, "x", (r) => added(r, "svc", q) / added(r, "mcp-proxy", q), { op: "<=", value: 0.5 }, "same run")),
    m("c=8 p50, directly", "ms", (r) => r.c8.direct!.p50),
    m("c=8 p50, mcp-proxy 0.13", "ms", (r) => r.c8["mcp-proxy"]!.p50, undefined, "peer"),
    m("c=8 p50, svc", "ms", (r) => r.c8.svc!.p50),
    m("c=8 p50, svc / mcp-proxy", "x", (r) => r.c8.svc!.p50 / r.c8["mcp-proxy"]!.p50, { op: "<=", value: 1 }, "same run; ContextForge not a peer here (docs/performance.md)"),
  ];
}

export const mcpStdio: Suite = {
  name: "mcp-stdio",
  async run(ctx) {
    const calls = ctx.quick ? 100 : 300;
    const runs: McpStdioResult[] = [];
    for (let i = 0; i < ctx.runs; i++) {
      const r = await measureMcpStdio(calls);
      ctx.say(
        `  MCP stdio echo (${calls} each): ${Object.entries(r.seq)
          .map(([k, v]) => `${k} p50 ${v.p50.toFixed(2)} / p99 ${v.p99.toFixed(2)} ms`)
          .join(", ")}`,
      );
      runs.push(r);
    }
    ctx.facts.mcp_stdio = { calls, note: "server-everything echo over stdio: directly, through mcp-proxy, through svc (own process)" };
    return mcpStdioMetrics(runs);
  },
};
