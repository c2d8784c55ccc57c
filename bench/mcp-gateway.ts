// The time svc's MCP gateway adds to a tools/call, alone.
//   bun bench/mcp-gateway.ts [--calls N]                      issue 13: one notes.lookup over https (bench/suites/mcp.ts)
//   bun bench/mcp-gateway.ts --stdio [--calls N] [--prof DIR] issue 34: server-everything's echo over stdio, directly,
//                                                             through mcp-proxy, ContextForge and svc (bench/suites/mcp-stdio.ts)
// Prints p50/p99 of each path and writes bench/results/mcp-gateway-<timestamp>.json.
// The machine is shared and noisy: compare the columns of one run, not runs.
import { mkdirSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { fmt, table, verdict } from "./lib/report.ts";
import { measureMcpGateway } from "./suites/mcp.ts";
import { mcpStdioMetrics, measureMcpStdio } from "./suites/mcp-stdio.ts";

const argv = process.argv.slice(2);
const opt = (name: string) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const CALLS = Number(opt("--calls") ?? 0) || (argv.includes("--stdio") ? 300 : 400);
const f = (x: number) => `${x.toFixed(2)} ms`;
let r: unknown;
if (argv.includes("--stdio")) {
  const prof = opt("--prof");
  const s = await measureMcpStdio(CALLS, prof ? { prof } : {});
  console.log(
    `MCP tools/call on server-everything's echo over stdio, ${CALLS} calls each (load ${loadavg()
      .map((x: number) => x.toFixed(2))
      .join(" ")})`,
  );
  console.log(`| path | sequential p50 | p99 | c=8 p50 | p99 |\n|---|---|---|---|---|`);
  for (const k of Object.keys(s.seq)) console.log(`| ${k} | ${f(s.seq[k]!.p50)} | ${f(s.seq[k]!.p99)} | ${f(s.c8[k]!.p50)} | ${f(s.c8[k]!.p99)} |`);
  const cf = s.cfSeq?.contextforge;
  if (cf && s.c8.contextforge) console.log(`| contextforge (sequential: its own phase) | ${f(cf.p50)} | ${f(cf.p99)} | ${f(s.c8.contextforge.p50)} | ${f(s.c8.contextforge.p99)} |`);
  const ms = mcpStdioMetrics([s]);
  console.log(`\n${table(ms)}`);
  for (const m of ms) if (verdict(m) === "miss") console.error(`missed: ${m.name} ${fmt(m.median)} ${m.unit}`);
  r = s;
} else {
  const g = await measureMcpGateway(CALLS);
  console.log(`MCP tools/call, ${CALLS} calls each, interleaved (one notes.lookup over https; audit on, encrypted, fsynced)`);
  console.log(`| path | p50 | p99 |\n|---|---|---|`);
  console.log(`| upstream directly | ${f(g.direct.p50)} | ${f(g.direct.p99)} |`);
  console.log(`| through the svc gateway | ${f(g.svc.p50)} | ${f(g.svc.p99)} |`);
  console.log(`| added by svc | ${f(g.added.p50)} | ${f(g.added.p99)} |`);
  r = g;
}
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
const out = join(import.meta.dir, "results", `mcp-gateway-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(out, JSON.stringify(r, null, 2));
console.log(`written ${out}`);
process.exit(0);
