// Issue 34: the time an MCP gateway adds to a tools/call on a stdio server, svc beside two peers
// installed by bench/setup-peers.sh: the bare bridge `mcp-proxy` 0.13 (PyPI, no decision and no
// audit) and IBM ContextForge 1.0.7 (PyPI, a full gateway with its own database; it reaches stdio
// servers only through a bridge: a second mcp-proxy here, because its own bridge
// `mcpgateway.translate` returns other sessions' answers under concurrency; the configuration
// and that finding: bench/load/mcp-peers.ts). One upstream kind, server-everything's `echo` over
// stdio, reached four ways with the official TypeScript SDK client: directly (the client spawns
// the server), through mcp-proxy (Streamable HTTP on loopback, it spawns its own server), through
// ContextForge (Streamable HTTP to a virtual server of the gateway, the gateway to its mcp-proxy
// over Streamable HTTP) and through svc's gateway (a process of its own,
// bench/load/mcp-gateway-host.ts: decided, the arguments sealed to one age recipient, the
// decision record fsynced before the upstream call, the outcome after). Every answer must echo
// its own call's message. Sequential calls are interleaved call by call so all paths see the same
// load (ContextForge, ~100 times slower, in a phase of its own beside the direct call and its
// bridge, so the others do not idle through its calls); at concurrency 8 the paths take turns in blocks (8 sessions on a gateway or bridge, 8
// calls in flight on the direct client). A peer not installed, or ContextForge failing to start,
// is a note in the table.
//   bun bench/mcp-gateway.ts --stdio [--calls N] [--prof DIR]
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { join } from "node:path";
import { EVERYTHING_JS } from "../../test/support/mcp/servers.ts";
import type { Suite } from "../lib/context.ts";
import { type Metric, type Target, metric } from "../lib/report.ts";
import { cpuSeconds } from "../lib/procs.ts";
import { summarize } from "../lib/stats.ts";
import { CONTEXTFORGE_BIN, CONTEXTFORGE_VERSION, MCP_PROXY_BIN, freePort, startContextForge, waitHttp } from "../load/mcp-peers.ts";

const CF = `ContextForge ${CONTEXTFORGE_VERSION}`;
const SERVER = [process.execPath, EVERYTHING_JS, "stdio"];

type Summary = ReturnType<typeof summarize>;
type Quantile = "p50" | "p99";
const QUANTILES: readonly Quantile[] = ["p50", "p99"];
/** `pid`: the gateway's or bridge's own process (its stdio server is a child of its own), for its CPU per call. */
type Path = { name: string; clients: Client[]; tool: string; pid?: number };
export type McpStdioResult = {
  calls: number;
  seq: Record<string, Summary>;
  /** CPU (user + system) of the path's process per sequential call, ms; the processes idle between their calls. */
  cpuMs: Record<string, number>;
  c8: Record<string, Summary>;
  /** ContextForge's sequential phase, with the direct call and its bridge measured beside it. */
  cfSeq?: Record<string, Summary>;
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

/** Starts the paths, measures `calls` sequential calls each (interleaved) and `calls` at c=8 each, tears down. */
export async function measureMcpStdio(calls: number, o: { prof?: string; warmup?: number } = {}): Promise<McpStdioResult> {
  const warmup = o.warmup ?? 50;
  const note: string[] = [];
  const procs: Bun.Subprocess[] = [];
  const closers: (() => Promise<void>)[] = [];
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
      paths.push({ name: "mcp-proxy", clients: cs, tool: "echo", pid: mp.pid });
    } else note.push(`mcp-proxy skipped: ${MCP_PROXY_BIN} missing (bash bench/setup-peers.sh)`);

    if ((await Bun.file(CONTEXTFORGE_BIN).exists()) && (await Bun.file(MCP_PROXY_BIN).exists())) {
      try {
        const cf = await startContextForge(SERVER);
        closers.push(cf.close);
        const cs = await httpClients(cf.url, 8, cf.headers);
        clients.push(...cs);
        // The gateway names a tool after its gateway (`everything-echo`): take the name from tools/list.
        const listed = (await cs[0]!.listTools()).tools.map((t) => t.name);
        const tool = listed.find((n) => n === cf.tool);
        if (!tool) throw new Error(`tools/list on its virtual server has no ${cf.tool}: ${listed.join(", ")}`);
        paths.push({ name: "contextforge", clients: cs, tool, pid: cf.pid });
      } catch (e) {
        note.push(`${CF} skipped: ${(e as Error).message}`);
      }
    } else note.push(`${CF} skipped: ${CONTEXTFORGE_BIN} or its bridge ${MCP_PROXY_BIN} missing (bash bench/setup-peers.sh)`);

    const svc = await httpClients(url, 8, { authorization: `Bearer ${jwt}` });
    clients.push(...svc);
    paths.push({ name: "svc", clients: svc, tool: "everything.echo", pid: host.pid });

    // Each call's message is its own (call and session), and its answer must echo it back.
    const once = async (p: Path, i: number, k = 0): Promise<number> => {
      const message = `m${k}.${i}`;
      const t = performance.now();
      const r = await p.clients[k]!.callTool({ name: p.tool, arguments: { message } });
      const ms = performance.now() - t;
      const text = (r.content as { type: string; text?: string }[] | undefined)?.[0]?.text;
      if (r.isError || text !== `Echo: ${message}`) throw new Error(`${p.name}: sent ${message}, answered ${JSON.stringify(r.content).slice(0, 300)}`);
      return ms;
    };
    /** `calls` sequential calls on each of `ps`, interleaved call by call; each path's process CPU per call. */
    const sequential = async (ps: Path[]) => {
      const seq: Record<string, number[]> = Object.fromEntries(ps.map((p) => [p.name, []]));
      const cpu0: Record<string, number> = {};
      for (let i = 0; i < warmup + calls; i++) {
        if (i === warmup) for (const p of ps) if (p.pid) cpu0[p.name] = cpuSeconds(p.pid);
        for (const p of ps) {
          const ms = await once(p, i);
          if (i >= warmup) seq[p.name]!.push(ms);
        }
      }
      return { seq, cpuMs: Object.fromEntries(ps.filter((p) => p.pid).map((p) => [p.name, ((cpuSeconds(p.pid!) - cpu0[p.name]!) / calls) * 1000])) };
    };
    // ContextForge's calls take ~100 times the others': interleaved with them, every other path
    // would idle that long between its calls (colder caches, background timers counted as its
    // CPU per call). So the targets' paths are measured among themselves, and ContextForge in a
    // phase of its own beside the direct call and its bridge.
    const main = await sequential(paths.filter((p) => p.name !== "contextforge"));
    const cfPath = paths.find((p) => p.name === "contextforge");
    const beside = cfPath ? await sequential(paths.filter((p) => p.name === "direct" || p.name === "mcp-proxy" || p === cfPath)) : null;
    const seq = main.seq;
    const cpuMs = { ...main.cpuMs, ...(beside ? { contextforge: beside.cpuMs.contextforge! } : {}) };
    const cfSeq = beside ? beside.seq : null;
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
    return { calls, seq: sum(seq), cpuMs, c8: sum(c8), ...(cfSeq ? { cfSeq: sum(cfSeq) } : {}), note };
  } finally {
    for (const c of new Set(clients)) await c.close().catch(() => {});
    for (const p of procs) {
      if (p.stdin && typeof p.stdin !== "number") (p.stdin as { end(): void }).end();
      else p.kill();
    }
    await Promise.race([Promise.all(procs.map(async (p) => p.exited)), Bun.sleep(5000)]);
    for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
    for (const close of closers) await close();
  }
}

/** Issue 34's MCP targets as metrics, one value per run. */
export function mcpStdioMetrics(runs: McpStdioResult[]): Metric[] {
  const m = (name: string, unit: string, f: (r: McpStdioResult) => number, target?: Target, note?: string) => metric("mcp stdio", name, unit, runs.map(f), target, note);
  const added = (r: McpStdioResult, path: string, q: Quantile) => (r.seq[path]?.[q] ?? Number.NaN) - r.seq.direct![q];
  // ContextForge's figures come from its own phase, against that phase's direct call and bridge.
  const cfAdded = (r: McpStdioResult, path: string, q: Quantile) => (r.cfSeq?.[path]?.[q] ?? Number.NaN) - (r.cfSeq?.direct?.[q] ?? Number.NaN);
  const has = (path: string) => runs.every((r) => r.seq[path] ?? r.cfSeq?.[path]);
  const skipped = (name: string, what: string) => metric("mcp stdio", name, "", [Number.NaN], undefined, runs[0]?.note.filter((n) => n.startsWith(what)).join("; "));
  const out: Metric[] = [
    ...QUANTILES.map((q) => m(`tools/call ${q}, directly (stdio)`, "ms", (r) => r.seq.direct![q])),
    m("added by svc, p50 (sequential)", "ms", (r) => added(r, "svc", "p50"), { op: "<=", value: 1.5 }, "decided, sealed, the decision record fsynced before the upstream"),
    m("added by svc, p99 (sequential)", "ms", (r) => added(r, "svc", "p99"), { op: "<=", value: 5 }),
  ];
  if (has("mcp-proxy")) {
    out.push(
      m("added by mcp-proxy 0.13, p50 (sequential)", "ms", (r) => added(r, "mcp-proxy", "p50"), undefined, "peer: no decision, no audit"),
      m("added by mcp-proxy 0.13, p99 (sequential)", "ms", (r) => added(r, "mcp-proxy", "p99"), undefined, "peer"),
      ...QUANTILES.map((q) => m(`added ${q}, svc / mcp-proxy`, "x", (r) => added(r, "svc", q) / added(r, "mcp-proxy", q), { op: "<=", value: 0.5 }, "same run")),
    );
  } else out.push(skipped("mcp-proxy 0.13 (bare bridge)", "mcp-proxy"));
  if (has("contextforge")) {
    out.push(
      m(`added by ${CF}, p50 (sequential)`, "ms", (r) => cfAdded(r, "contextforge", "p50"), undefined, "peer: its gateway in front of an mcp-proxy; a phase of its own"),
      m(`added by ${CF}, p99 (sequential)`, "ms", (r) => cfAdded(r, "contextforge", "p99"), undefined, "peer"),
      m(`added by ${CF} beyond its bridge, p50`, "ms", (r) => cfAdded(r, "contextforge", "p50") - cfAdded(r, "mcp-proxy", "p50"), undefined, "its path minus mcp-proxy's, same phase"),
    );
  } else out.push(skipped(CF, CF));
  const cpu = (path: string, label: string, note: string) => (has(path) ? [m(`CPU per call, ${label}`, "ms", (r) => r.cpuMs[path] ?? Number.NaN, undefined, note)] : []);
  out.push(
    ...cpu("mcp-proxy", "mcp-proxy 0.13", "its process, over the sequential calls"),
    ...cpu("contextforge", `${CF} gateway`, "its gateway process, without its bridge"),
    ...cpu("svc", "svc gateway host", "the host process (gateway, spool, a fake control plane)"),
    m("c=8 p50, directly", "ms", (r) => r.c8.direct!.p50),
  );
  if (has("mcp-proxy")) out.push(m("c=8 p50, mcp-proxy 0.13", "ms", (r) => r.c8["mcp-proxy"]!.p50, undefined, "peer"));
  if (has("contextforge")) out.push(m(`c=8 p50, ${CF}`, "ms", (r) => r.c8.contextforge!.p50, undefined, "peer"));
  out.push(m("c=8 p50, svc", "ms", (r) => r.c8.svc!.p50));
  if (has("mcp-proxy")) out.push(m("c=8 p50, svc / mcp-proxy", "x", (r) => r.c8.svc!.p50 / r.c8["mcp-proxy"]!.p50, { op: "<=", value: 1 }, "same run"));
  return out;
}

export const mcpStdio: Suite = {
  name: "mcp-stdio",
  async run(ctx) {
    const calls = ctx.quick ? 100 : 300;
    const runs: McpStdioResult[] = [];
    for (let i = 0; i < ctx.runs; i++) {
      const r = await measureMcpStdio(calls);
      ctx.say(
        `  MCP stdio echo (${calls} each): ${Object.entries({ ...r.seq, ...(r.cfSeq?.contextforge ? { contextforge: r.cfSeq.contextforge } : {}) })
          .map(([k, v]) => `${k} p50 ${v.p50.toFixed(2)} / p99 ${v.p99.toFixed(2)} ms`)
          .join(", ")}`,
      );
      runs.push(r);
    }
    ctx.facts.mcp_stdio = { calls, note: `server-everything echo over stdio: directly, through mcp-proxy, through ${CF} (its gateway in front of an mcp-proxy), through svc (own process)` };
    return mcpStdioMetrics(runs);
  },
};
