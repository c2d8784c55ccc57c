// The time svc's MCP gateway adds to a tools/call (issue 13), alone: `bun bench/mcp-gateway.ts [--calls N]`.
// The measurement is bench/suites/mcp.ts (also run by `bun bench/run.ts --only mcp`). Prints
// p50/p99 of each path and of the difference, and writes bench/results/mcp-gateway-<timestamp>.json.
// The machine is shared and noisy: compare the two columns of one run, not runs.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { measureMcpGateway } from "./suites/mcp.ts";

const argv = process.argv.slice(2);
const CALLS = Number(argv[argv.indexOf("--calls") + 1] ?? 0) || 400;
const r = await measureMcpGateway(CALLS);
const f = (x: number) => `${x.toFixed(2)} ms`;
console.log(`MCP tools/call, ${CALLS} calls each, interleaved (one notes.lookup over https; audit on, encrypted, fsynced)`);
console.log(`| path | p50 | p99 |\n|---|---|---|`);
console.log(`| upstream directly | ${f(r.direct.p50)} | ${f(r.direct.p99)} |`);
console.log(`| through the svc gateway | ${f(r.svc.p50)} | ${f(r.svc.p99)} |`);
console.log(`| added by svc | ${f(r.added.p50)} | ${f(r.added.p99)} |`);
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
const out = join(import.meta.dir, "results", `mcp-gateway-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(out, JSON.stringify(r, null, 2));
console.log(`written ${out}`);
process.exit(0);
