// Which process API the stdio MCP transport should use (issue 36 item 5): the SDK's own
// StdioClientTransport (cross-spawn over node:child_process), ours over execa
// (src/proxy/mcp/stdio-transport.ts), and one over Bun.spawn written here for the comparison.
// Against a real MCP server (@modelcontextprotocol/server-everything, stdio, run by bun):
// the time to spawn and initialize, and the round trip of ping and of tools/call echo,
// interleaved in one run so the shared machine's noise falls on all three alike.
//   bun bench/stdio-spawn.ts [--calls N] [--starts N]
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ReadBuffer, serializeMessage } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { ExecaStdioTransport } from "../src/proxy/mcp/stdio-transport.ts";
import { EVERYTHING_JS } from "../test/support/mcp/servers.ts";
import { summarize } from "./lib/stats.ts";

const argv = process.argv.slice(2);
const flag = (name: string, dflt: number) => Number(argv[argv.indexOf(name) + 1] ?? 0) || dflt;
const CALLS = flag("--calls", 1000);
const STARTS = flag("--starts", 10);
const SERVER = [process.execPath, EVERYTHING_JS, "stdio"];
const env = getDefaultEnvironment();

/** The same transport over Bun.spawn: the candidate that keeps Bun's own API. */
class BunStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  private proc: Bun.Subprocess<"pipe", "pipe", "ignore"> | undefined;
  private readonly buffer = new ReadBuffer();
  async start(): Promise<void> {
    const proc = Bun.spawn(SERVER, { env, stdin: "pipe", stdout: "pipe", stderr: "ignore" });
    this.proc = proc;
    void (async () => {
      const reader = proc.stdout.getReader();
      for (let r = await reader.read(); !r.done; r = await reader.read()) {
        this.buffer.append(Buffer.from(r.value));
        for (let m = this.buffer.readMessage(); m; m = this.buffer.readMessage()) this.onmessage?.(m);
      }
      this.onclose?.();
    })();
  }
  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.proc?.stdin;
    if (!stdin) throw new Error("not running");
    await stdin.write(serializeMessage(message));
    await stdin.flush();
  }
  async close(): Promise<void> {
    const proc = this.proc;
    this.proc = undefined;
    if (!proc) return;
    await proc.stdin.end();
    const t = setTimeout(() => proc.kill("SIGKILL"), 2000);
    await proc.exited;
    clearTimeout(t);
  }
}

const kinds = {
  "sdk (cross-spawn)": () => new StdioClientTransport({ command: SERVER[0]!, args: SERVER.slice(1), env, stderr: "ignore" }),
  execa: () => new ExecaStdioTransport({ command: SERVER[0]!, args: SERVER.slice(1), env }),
  "Bun.spawn": () => new BunStdioTransport(),
} as const;
type Kind = keyof typeof kinds;
const names = Object.keys(kinds) as Kind[];

async function connect(kind: Kind): Promise<Client> {
  const client = new Client({ name: "bench", version: "1" });
  await client.connect(kinds[kind]());
  return client;
}

const starts: Record<string, number[]> = {};
const pings: Record<string, number[]> = {};
const calls: Record<string, number[]> = {};
for (const k of names) [starts[k], pings[k], calls[k]] = [[], [], []];

for (let i = 0; i < STARTS; i++) {
  for (const k of names) {
    const t = performance.now();
    const c = await connect(k);
    starts[k]!.push(performance.now() - t);
    await c.close();
  }
}
const clients = Object.fromEntries(await Promise.all(names.map(async (k) => [k, await connect(k)] as const))) as Record<Kind, Client>;
const payload = "x".repeat(256);
for (let i = 0; i < CALLS; i++) {
  for (const k of names) {
    let t = performance.now();
    await clients[k].ping();
    pings[k]!.push(performance.now() - t);
    t = performance.now();
    await clients[k].callTool({ name: "echo", arguments: { message: payload } });
    calls[k]!.push(performance.now() - t);
  }
}
await Promise.all(names.map(async (k) => clients[k].close()));

const f = (x: number) => `${x.toFixed(3)} ms`;
const result: Record<string, unknown> = { calls: CALLS, starts: STARTS, server: "server-everything (bun, stdio)" };
console.log(`stdio MCP transports, one run, interleaved: ${STARTS} starts, ${CALLS} pings and tools/call echo each`);
console.log("| transport | spawn + initialize p50 | ping p50 | ping p99 | tools/call p50 | tools/call p99 |\n|---|---|---|---|---|---|");
for (const k of names) {
  const [s, p, c] = [summarize(starts[k]!), summarize(pings[k]!), summarize(calls[k]!)];
  result[k] = { start: s, ping: p, call: c };
  console.log(`| ${k} | ${f(s.p50)} | ${f(p.p50)} | ${f(p.p99)} | ${f(c.p50)} | ${f(c.p99)} |`);
}
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
const out = join(import.meta.dir, "results", `stdio-spawn-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(out, JSON.stringify(result, null, 2));
console.log(`written ${out}`);
process.exit(0);
