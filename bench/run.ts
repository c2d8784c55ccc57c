// The benchmark runner (issue 9): `bun bench/run.ts [--quick] [--only <suite>[,<suite>]] [--runs N] [--peers] [--build]`.
// Builds or reuses dist/svc, starts a real control plane, model server double and
// `svc proxy serve`, sets the scenario up through the admin API, runs each suite N times,
// prints a table (median of the runs, target, pass/miss) and writes
// bench/results/<timestamp>.json (git-ignored). See docs/performance.md.
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, totalmem } from "node:os";
import { join } from "node:path";
import type { BenchContext, Suite } from "./lib/context.ts";
import { markdown, type Metric, table, verdict } from "./lib/report.ts";
import { ensureBinary, startStack } from "./lib/stack.ts";
import { controlplane } from "./suites/controlplane.ts";
import { conditions } from "./suites/conditions.ts";
import { controlplanePg } from "./suites/controlplane-pg.ts";
import { decisions } from "./suites/decisions.ts";
import { footprint } from "./suites/footprint.ts";
import { limits } from "./suites/limits.ts";
import { mcp } from "./suites/mcp.ts";
import { mcpStdio } from "./suites/mcp-stdio.ts";
import { model } from "./suites/model.ts";
import { peers } from "./suites/peers.ts";
import { policies } from "./suites/policies.ts";
import { spool } from "./suites/spool.ts";

const SUITES: Suite[] = [decisions, policies, limits, conditions, model, mcp, controlplane, controlplanePg, footprint, spool, peers, mcpStdio];
/** Issues 14 and 34's side-by-side suites: only with --peers (or named in --only). */
const PEER_SUITES: Suite[] = [controlplanePg, peers, mcpStdio];
const USAGE = `usage: bun bench/run.ts [--quick] [--only <suite>[,<suite>…]] [--runs N] [--peers] [--build]

  --quick      1 s load per run, 2 runs, 100k audit records (100k unshipped in the spool suite): about 2 minutes
  --only       suites: ${SUITES.map((s) => s.name).join(", ")}
  --runs N     repetitions per measurement (default 3; the table shows the median)
  --peers      also run the side-by-side suites: peers (OPA, Cedar-wasm, LiteLLM, installed once by
               bench/setup-peers.sh), controlplane-pg (ingest and 304 polls on a durable PostgreSQL)
               and mcp-stdio (the MCP gateway beside the bare bridge mcp-proxy and ContextForge, issue 34)
  --build      rebuild dist/svc even when it is newer than src/
  --markdown   also print the table as Markdown (for docs/performance.md)

examples:
  bun bench/run.ts
  bun bench/run.ts --quick --only decisions,model`;

type Options = { quick: boolean; only: string[] | null; runs: number; peers: boolean; build: boolean; markdown: boolean };

function parseArgs(argv: string[]): Options {
  const o: Options = { quick: false, only: null, runs: 0, peers: false, build: false, markdown: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--quick") o.quick = true;
    else if (a === "--peers") o.peers = true;
    else if (a === "--build") o.build = true;
    else if (a === "--markdown") o.markdown = true;
    else if (a === "--only") o.only = (argv[++i] ?? "").split(",").filter(Boolean);
    else if (a === "--runs") o.runs = Number(argv[++i]);
    else if (a === "--help" || a === "-h") {
      console.log(USAGE);
      process.exit(0);
    } else {
      console.error(`bench: unknown argument "${a}"; see bun bench/run.ts --help`);
      process.exit(2);
    }
  }
  if (o.runs === 0) o.runs = o.quick ? 2 : 3;
  if (!Number.isInteger(o.runs) || o.runs < 1 || o.runs > 20) {
    console.error("bench: --runs must be an integer from 1 to 20");
    process.exit(2);
  }
  const unknown = (o.only ?? []).filter((n) => !SUITES.some((s) => s.name === n));
  if (unknown.length > 0) {
    console.error(`bench: unknown suite ${unknown.join(", ")}; choose from ${SUITES.map((s) => s.name).join(", ")}`);
    process.exit(2);
  }
  return o;
}

function machine() {
  const cpuModel = /model name\s*:\s*(.+)/.exec(readFileSync("/proc/cpuinfo", "utf8"))?.[1] ?? cpus()[0]?.model ?? "unknown";
  const nproc = Number(Bun.spawnSync(["nproc"]).stdout.toString().trim()) || cpus().length;
  return { nproc, cpu_model: cpuModel, memory_gb: Math.round((totalmem() / 2 ** 30) * 10) / 10, bun: Bun.version, kernel: readFileSync("/proc/sys/kernel/osrelease", "utf8").trim() };
}

const opts = parseArgs(process.argv.slice(2));
const say = (s: string) => console.error(s);
const started = Date.now();
const m = machine();
say(`svc bench: ${m.nproc} cores (${m.cpu_model}), ${m.memory_gb} GB, Bun ${m.bun}; runs=${opts.runs}${opts.quick ? ", quick" : ""}`);
ensureBinary(opts.build, say);
const stack = await startStack(say);
const loadavg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const ctx: BenchContext = {
  stack,
  runs: opts.runs,
  quick: opts.quick,
  durationS: opts.quick ? 1 : 3,
  peers: opts.peers,
  say,
  facts: { proxy_first_start_ms: stack.proxy.startMs, loadavg_before: loadavg() },
};
const selected = SUITES.filter((s) => (opts.only ? opts.only.includes(s.name) : !PEER_SUITES.includes(s) || opts.peers));
const metrics: Metric[] = [];
const failures: Record<string, string> = {};
try {
  for (const suite of selected) {
    say(`▸ ${suite.name}`);
    const t0 = performance.now();
    try {
      metrics.push(...(await suite.run(ctx)));
    } catch (e) {
      failures[suite.name] = (e as Error).stack ?? String(e);
      say(`  ${suite.name} failed: ${(e as Error).message}`);
    }
    say(`  (${((performance.now() - t0) / 1000).toFixed(1)} s)`);
  }
} finally {
  ctx.facts.loadavg_after = loadavg();
  await stack.stop();
}

console.log(table(metrics));
if (opts.markdown) console.log(`\n${markdown(metrics)}`);
const dir = join(import.meta.dir, "results");
mkdirSync(dir, { recursive: true });
const file = join(dir, `${new Date(started).toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(
  file,
  `${JSON.stringify({ started_at: new Date(started).toISOString(), seconds: (Date.now() - started) / 1000, machine: m, options: opts, metrics: metrics.map((x) => ({ ...x, verdict: verdict(x) })), facts: ctx.facts, failures }, null, 2)}\n`,
);
say(`load average before ${ctx.facts.loadavg_before}, after ${ctx.facts.loadavg_after} (other work on the machine skews the figures)`);
say(`\nwrote ${file} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
process.exit(Object.keys(failures).length > 0 ? 1 : 0);
