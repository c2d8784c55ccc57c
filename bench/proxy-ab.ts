// Two (or more) proxy builds side by side, alternating, on one control plane and scenario:
//   bun bench/proxy-ab.ts --proxy base="bun /path/to/old/src/main.ts" --proxy new="bun src/main.ts" \
//     [--rounds 3] [--duration 2] [--concurrency 8,64] [--prof DIR]
// Each round starts each proxy afresh, drives it with the same Python client as the `peers`
// suite (bench/load/decide_load.py, keep-alive, digest-only crm.read decisions) and reads the
// proxy's CPU (utime+stime over the run / decisions answered). With --prof the proxies run
// under `--cpu-prof` (only for `bun …` commands) and the profiles land in DIR.
// Prints one line per proxy and run and a median summary; for comparing builds on a shared
// machine, where only ratios within one run mean anything.
// With --model N, each proxy instead relays N streamed chat calls to the model double, each
// paired with the same call made directly (Bun fetch, as the `model` suite), 5 ms pauses
// between calls: time to first token direct / via the proxy and the added median (ms).
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { addPolicy, adminApi, must, setUpScenario } from "../src/proxy/testing/integration.ts";
import { startControlPlane } from "../test/support/controlplane-process.ts";
import { decideLoad, rssPeak } from "./lib/procs.ts";
import { median } from "./lib/stats.ts";
import { type BenchProxy, startBenchProxy, startModelServerProcess } from "./lib/stack.ts";
import { directInit, type Timing, timeStream } from "./suites/model.ts";

type Opts = { proxies: [string, string[]][]; rounds: number; duration: number; concurrency: number[]; prof: string | null; perf: string | null; model: number };

/** User and system CPU seconds of a process so far (all threads). */
function cpuOf(pid: number): { user: number; sys: number } {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return { user: Number(f[11]) / 100, sys: Number(f[12]) / 100 };
}

function parse(argv: string[]): Opts {
  const o: Opts = { proxies: [], rounds: 3, duration: 2, concurrency: [8, 64], prof: null, perf: null, model: 0 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const v = argv[++i] ?? "";
    if (a === "--proxy") {
      const eq = v.indexOf("=");
      o.proxies.push([
        v.slice(0, eq),
        v
          .slice(eq + 1)
          .split(" ")
          .filter(Boolean),
      ]);
    } else if (a === "--rounds") o.rounds = Number(v);
    else if (a === "--duration") o.duration = Number(v);
    else if (a === "--concurrency") o.concurrency = v.split(",").map(Number);
    else if (a === "--prof") o.prof = v;
    else if (a === "--perf") o.perf = v;
    else if (a === "--model") o.model = Number(v);
    else throw new Error(`unknown argument ${a}`);
  }
  if (o.proxies.length === 0) throw new Error("name at least one --proxy name=command");
  return o;
}

const o = parse(process.argv.slice(2));
const loadavg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const root = mkdtempSync(join(tmpdir(), "svc-ab-"));
const cp = await startControlPlane();
const api = adminApi(cp);
const scenario = await setUpScenario(api, "bench");
const model = await startModelServerProcess();
await addPolicy(api, scenario, `group:sales-bench`, "tool:crm.read");
if (o.model > 0) {
  // As the bench stack sets it up (lib/stack.ts): alice may call the model profile's one model.
  await addPolicy(api, scenario, `user:${scenario.users.alice!.id}`, "model:invoke");
  const mp = await must(
    api("POST", "/model-profiles", { display_name: "Bench LLM", endpoint: model.endpoint, auth_type: "none", default_model: "m-small", models: ["m-small"], workspace: scenario.workspace }),
    "create model profile",
  );
  await must(api("POST", `/model-profiles/${mp.id}/assign`, { agent_id: scenario.agentId }), "assign model profile");
}
console.error(`load average before: ${loadavg()}`);

/** Streamed calls direct and via the proxy, paired, 5 ms pauses: medians of time to first token. */
async function modelCalls(px: BenchProxy, n: number): Promise<Row> {
  const direct = { url: `${model.endpoint}/chat/completions`, init: directInit(model.caFile) };
  const via = {
    url: "http://localhost/v1/chat/completions",
    init: {
      ...directInit(model.caFile),
      tls: undefined,
      unix: px.socket,
      headers: { authorization: `Bearer ${px.token}`, "content-type": "application/json", "x-svc-user-id": scenario.users.alice!.remote },
    } as RequestInit,
  };
  for (let i = 0; i < 20; i++) for (const x of [direct, via]) await timeStream(x.url, x.init);
  const d: Timing[] = [];
  const p: Timing[] = [];
  for (let i = 0; i < n; i++) {
    d.push(await timeStream(direct.url, direct.init));
    await Bun.sleep(5);
    p.push(await timeStream(via.url, via.init));
    await Bun.sleep(5);
  }
  const ttft = (xs: Timing[]) => median(xs.map((x) => x.ttft));
  return { direct: ttft(d), via: ttft(p), added: ttft(p) - ttft(d) };
}
type Row = Record<string, number>;

/** Decisions at each concurrency with the Python keep-alive client: latency, rate, CPU, RSS. */
async function decideRound(px: BenchProxy, name: string, r: number): Promise<Row> {
  const row: Row = {};
  const common = [
    "--socket",
    px.socket,
    "--url-path",
    "/v1/tools/decide",
    "--body-style",
    "svc",
    "--keepalive",
    "--duration",
    String(o.duration),
    "--warmup",
    "0.5",
    "--tool",
    "crm.read",
    "--user",
    scenario.users.alice!.remote,
  ];
  // JIT warm-up (a long-running proxy is warm), not measured.
  await decideLoad([...common.map((x) => (x === String(o.duration) ? "1.5" : x)), "--concurrency", "16"], px.token);
  for (const c of o.concurrency) {
    const cpu0 = cpuOf(px.proc.pid);
    const rss = rssPeak(px.proc.pid);
    const perf = o.perf
      ? Bun.spawn(["perf", "record", "-g", "-o", join(o.perf, `${name}-${r}-c${c}.data`), "-p", String(px.proc.pid), "--", "sleep", String(o.duration)], { stdout: "ignore", stderr: "ignore" })
      : null;
    const res = await decideLoad([...common, "--concurrency", String(c)], px.token);
    await perf?.exited;
    const cpu1 = cpuOf(px.proc.pid);
    const cpu = cpu1.user + cpu1.sys - cpu0.user - cpu0.sys;
    row[`sysUs@${c}`] = ((cpu1.sys - cpu0.sys) / (res.rps * (o.duration + 0.5))) * 1e6;
    if (res.errors > 0 || !res.answers.permit) throw new Error(`${name}: ${res.errors} errors ${JSON.stringify(res.error_kinds)} ${JSON.stringify(res.answers)}`);
    row[`p50@${c}`] = res.p50_ms;
    row[`p99@${c}`] = res.p99_ms;
    row[`rps@${c}`] = res.rps;
    row[`cpuUs@${c}`] = (cpu / (res.rps * (o.duration + 0.5))) * 1e6;
    row[`rssMB@${c}`] = rss.stop();
  }
  return row;
}

const rows = new Map<string, Row[]>(o.proxies.map(([n]) => [n, []]));
try {
  for (let r = 0; r < o.rounds; r++) {
    for (const [name, cmd] of o.proxies) {
      let command = cmd;
      if (o.prof && cmd[0] === "bun") {
        mkdirSync(o.prof, { recursive: true });
        command = ["bun", "--cpu-prof", `--cpu-prof-dir=${o.prof}`, `--cpu-prof-name=${name}-${r}.cpuprofile`, ...cmd.slice(1)];
      }
      const px = await startBenchProxy({ token: scenario.runtimeToken, cpUrl: cp.url, caFile: model.caFile, root, command });
      const row: Row = {};
      try {
        Object.assign(row, o.model > 0 ? await modelCalls(px, o.model) : await decideRound(px, name, r));
      } finally {
        await px.stop();
      }
      rows.get(name)!.push(row);
      console.error(
        `round ${r + 1} ${name}: ${Object.entries(row)
          .map(([k, v]) => `${k} ${v.toFixed(/^(rps|cpu|sys)/.test(k) ? 0 : 3)}`)
          .join("  ")}  (load ${loadavg()})`,
      );
    }
  }
} finally {
  await model.stop();
  await cp.stop();
  rmSync(root, { recursive: true, force: true });
  rmSync(cp.dataDir, { recursive: true, force: true });
}
console.log(`medians over ${o.rounds} rounds (load average after: ${loadavg()})`);
for (const [name, rs] of rows) {
  const keys = Object.keys(rs[0] ?? {});
  console.log(`${name}: ${keys.map((k) => `${k} ${median(rs.map((x) => x[k]!)).toFixed(/^(rps|cpu|sys)/.test(k) ? 0 : 3)}`).join("  ")}`);
}
const [first] = o.proxies;
for (const [name] of o.proxies.slice(1)) {
  const a = rows.get(first![0])!;
  const b = rows.get(name)!;
  const keys = Object.keys(a[0] ?? {});
  console.log(`${name} / ${first![0]}: ${keys.map((k) => `${k} ${median(b.map((x, i) => x[k]! / a[i]![k]!)).toFixed(2)}x`).join("  ")}`);
}
