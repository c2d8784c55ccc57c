// Conditions nobody can abuse (issue 28), measured:
//   bun bench/adversarial-conditions.ts [--duration S] [--runs N] [--concurrency C]
// 1. The time to refuse an adversarial condition when it is written: checkCondition, what the
//    control plane runs on POST/PATCH/apply (in this process, warm), for the issue's two
//    (nested `all` over the arguments; `matches('^(a+)+$')`). Target ≤ 10 ms.
// 2. The proxy (in this process, on its unix socket, against the fake control plane) deciding
//    for "other users" under a normal load (decide_load.py, C threads, a condition on their
//    arguments) alone; then with one more caller sending, back to back, the adversarial
//    condition forced into the bundle (a 400-item list); then with one sending a 990-item list
//    to a permitted one-loop condition (the most work the meter lets a condition do). Their
//    p99 against the normal load's alone, target ≤ 1.2× for the forced one. Rounds alternate.
// Prints a table and writes bench/results/adversarial-conditions-<ts>.json.
// Run it under `flock /work/coord/heavy.lock`: the machine is shared and noisy.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { checkCondition } from "../src/contract/conditions.ts";
import type { Logger } from "../src/log/index.ts";
import { loadConfig } from "../src/proxy/config.ts";
import { startDaemon } from "../src/proxy/daemon.ts";
import { bundleIdentity, bundleTool, fakeBundle } from "../src/proxy/testing/bundle.ts";
import { daemonEnv, startFakeControlPlane } from "../src/proxy/testing/fake-control-plane.ts";
import { takeNumber } from "./lib/args.ts";
import { type DecideLoad, decideLoad } from "./lib/procs.ts";
import { median, summarize } from "./lib/stats.ts";

const argv = process.argv.slice(2);
const duration = takeNumber(argv, "--duration", 5);
const runs = takeNumber(argv, "--runs", 3);
const concurrency = takeNumber(argv, "--concurrency", 4);
const NESTED = "args.l.all(x, args.l.all(y, args.l.all(z, x + y + z >= 0)))";
const REGEX = "args.q.matches('^(a+)+$')";

// 1. Refusal when written.
const refuse: Record<string, ReturnType<typeof summarize>> = {};
for (const expr of [NESTED, REGEX]) {
  for (let i = 0; i < 50; i++) checkCondition(expr);
  const ms: number[] = [];
  for (let i = 0; i < 500; i++) {
    const t = performance.now();
    if (!checkCondition(expr)) throw new Error(`${expr} was accepted`);
    ms.push(performance.now() - t);
  }
  refuse[expr] = summarize(ms);
}

// 2. The proxy under load.
const TOKEN = "svc_rt_bench_adversarial";
const quiet: Logger = { info: () => {}, warn: () => {}, error: () => {} };
const policies = [
  { id: "pol_normal", name: "tickets", src: "*", dst: "tool:crm.read", effect: "permit" as const, condition: "args.ticket >= 0 && 'status' in args.fields" },
  { id: "pol_forced", name: "nested loops", src: "*", dst: "tool:crm.scan", effect: "permit" as const, condition: NESTED },
  { id: "pol_loop", name: "one loop", src: "*", dst: "tool:crm.list", effect: "permit" as const, condition: "args.l.all(x, x >= 0)" },
];
const cp = startFakeControlPlane(
  fakeBundle({ tools: ["crm.read", "crm.scan", "crm.list"].map((n) => bundleTool(n)), policies, identities: [bundleIdentity("alice", ["sales"]), bundleIdentity("mallory")] }),
  TOKEN,
);
const dir = mkdtempSync(join(tmpdir(), "svc-bench-adv-"));
const config = loadConfig(daemonEnv(cp, dir));
const daemon = await startDaemon(config, quiet);
for (let i = 0; i < 400 && daemon.status.state !== "ready"; i++) await Bun.sleep(25);

const load = async (tool: string, user: string, c: number, args?: unknown) =>
  decideLoad(
    ["--socket", config.socketPath, "--concurrency", String(c), "--duration", String(duration), "--tool", tool, "--user", user, "--keepalive", ...(args ? ["--args-json", JSON.stringify(args)] : [])],
    TOKEN,
  );
const list = (n: number) => Array.from({ length: n }, (_, i) => i);
type Round = { alone: DecideLoad; forced: [DecideLoad, DecideLoad]; meter: [DecideLoad, DecideLoad] };
const rounds: Round[] = [];
for (let r = 0; r < runs; r++) {
  const alone = await load("crm.read", "fe-alice", concurrency);
  const forced = (await Promise.all([load("crm.read", "fe-alice", concurrency), load("crm.scan", "fe-mallory", 1, { l: list(400) })])) as [DecideLoad, DecideLoad];
  const meter = (await Promise.all([load("crm.read", "fe-alice", concurrency), load("crm.list", "fe-mallory", 1, { l: list(990) })])) as [DecideLoad, DecideLoad];
  rounds.push({ alone, forced, meter });
  console.error(
    `round ${r + 1}: alone p99 ${alone.p99_ms} ms; with forced ${forced[0].p99_ms} ms (attacker p50 ${forced[1].p50_ms}); with meter ${meter[0].p99_ms} ms (attacker p50 ${meter[1].p50_ms})`,
  );
}
await daemon.shutdown(1000);
await cp.stop();
rmSync(dir, { recursive: true, force: true });

const med = (f: (r: Round) => number) => median(rounds.map(f));
const rows: [string, number, string, string][] = [
  ["refuse nested `all` when written, p50", refuse[NESTED]!.p50, "ms", ""],
  ["refuse nested `all` when written, p99", refuse[NESTED]!.p99, "ms", "≤ 10"],
  ["refuse `matches('^(a+)+$')` when written, p99", refuse[REGEX]!.p99, "ms", "≤ 10"],
  [`others' decide p50, ${concurrency} callers alone`, med((r) => r.alone.p50_ms), "ms", ""],
  [`others' decide p99, ${concurrency} callers alone`, med((r) => r.alone.p99_ms), "ms", ""],
  ["others' decide p99, + forced nested `all` caller", med((r) => r.forced[0].p99_ms), "ms", ""],
  ["  ratio to alone", med((r) => r.forced[0].p99_ms / r.alone.p99_ms), "x", "≤ 1.2"],
  ["  the forced caller's refusal p50", med((r) => r.forced[1].p50_ms), "ms", ""],
  ["  the forced caller's refusal p99", med((r) => r.forced[1].p99_ms), "ms", "≤ 10"],
  ["others' decide p99, + a one-loop call at the meter's limit", med((r) => r.meter[0].p99_ms), "ms", ""],
  ["  ratio to alone", med((r) => r.meter[0].p99_ms / r.alone.p99_ms), "x", ""],
  ["  that caller's decision p50 (990 items: the most work a permitted condition does)", med((r) => r.meter[1].p50_ms), "ms", ""],
  ["others' decisions per second, alone / + forced / + meter", 0, "", `${med((r) => r.alone.rps).toFixed(0)} / ${med((r) => r.forced[0].rps).toFixed(0)} / ${med((r) => r.meter[0].rps).toFixed(0)}`],
];
console.log(`adversarial conditions: ${runs} rounds of ${duration} s, ${concurrency} normal callers (keep-alive), ${cpus().length} CPUs, load ${loadavg()[0]!.toFixed(2)}`);
for (const [name, v, unit, target] of rows) console.log(`${name.padEnd(58)} ${unit ? `${v.toFixed(3)} ${unit}`.padStart(12) : "".padStart(12)}  ${target}`);
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
const file = join(import.meta.dir, "results", `adversarial-conditions-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(file, JSON.stringify({ duration, runs, concurrency, cpus: cpus().length, load: loadavg(), refuse, rounds, rows }, null, 2));
console.log(`wrote ${file}`);
