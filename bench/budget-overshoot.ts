// Budget overshoot (issue 28), measured as a deployment runs: 2 control-plane replicas on one
// durable PostgreSQL, 2 proxies of one installation (each talking to its own control-plane
// replica), the model double reporting 150 tokens a call, a 3,000-token daily budget per
// scenario (20 calls fit):
//   one proxy, paced   calls one at a time on one proxy
//   one proxy, burst   8 callers at once on one proxy
//   two proxies, paced calls one at a time, alternating between the proxies, 20 ms apart
//   two proxies, burst 8 callers at once on each proxy (16 in flight)
// Every caller calls until refused. Prints, per scenario, the calls permitted, the tokens the
// control plane recorded, the overshoot (% of the limit) and the bound (the calls in flight ×
// 150 tokens), and writes bench/results/budget-overshoot-<time>.json.
//   bun bench/budget-overshoot.ts [--proxy "<command>"] [--rounds N]
// --proxy runs other proxies against the same control planes (e.g. an older build:
// `--proxy "bun /path/to/old/src/main.ts"`); the control planes are always this tree's.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import { startBenchPostgres } from "./lib/postgres.ts";
import { type BenchProxy, startBenchProxy } from "./lib/stack.ts";
import { addPolicy, adminApi, must, setUpScenario } from "../src/proxy/testing/integration.ts";
import { collectOutput, freePort, REPO, startControlPlane, waitFor } from "../test/support/controlplane-process.ts";
import { startModelServer } from "../test/support/model-server.ts";

const PER_CALL = 150;
const LIMIT = 3000;
const BURST = 8;

function parse(argv: string[]): { proxy: string[]; rounds: number } {
  const o = { proxy: ["bun", join(REPO, "src/main.ts")], rounds: 1 };
  for (let i = 0; i < argv.length; i++) {
    const v = argv[++i] ?? "";
    if (argv[i - 1] === "--proxy") o.proxy = v.split(" ").filter(Boolean);
    else if (argv[i - 1] === "--rounds") o.rounds = Number(v);
    else throw new Error(`unknown argument ${argv[i - 1]}; usage: bun bench/budget-overshoot.ts [--proxy "<command>"] [--rounds N]`);
  }
  return o;
}

const o = parse(process.argv.slice(2));
const loadavg = () => readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
const pg = await startBenchPostgres();
if ("skipped" in pg) {
  console.error(`skipped: ${pg.skipped}`);
  process.exit(0);
}
const root = mkdtempSync(join(tmpdir(), "svc-overshoot-"));
console.error(`load average before: ${loadavg()}`);
const cp1 = await startControlPlane({ env: { SVC_CP_DATABASE: pg.url } });
// The second replica: same store and master key (the first one's data directory), its own port.
const port2 = freePort();
const cp2Url = `http://127.0.0.1:${port2}`;
const cp2 = Bun.spawn([...(process.env.SVC_BIN ? [process.env.SVC_BIN] : ["bun", join(REPO, "src/main.ts")]), "controlplane", "serve"], {
  env: { ...cp1.env, SVC_CP_LISTEN: `127.0.0.1:${port2}`, SVC_CP_PUBLIC_URL: cp2Url },
  stdout: "pipe",
  stderr: "pipe",
});
const cp2Out = collectOutput(cp2);
await waitFor(async () => (await fetch(`${cp2Url}/healthz`)).ok, `the second control-plane replica\n${cp2Out.text()}`, 30_000);
const api = adminApi(cp1);
const s = await setUpScenario(api, "overshoot");
const model = startModelServer();
model.behaviour = { text: "fine", usage: { prompt_tokens: 100, completion_tokens: 50 } };
setInterval(() => model.requests.splice(0), 1000).unref();
await addPolicy(api, s, "*", "model:invoke");
const mp = await must(api("POST", "/model-profiles", { display_name: "LLM", endpoint: model.endpoint, auth_type: "none", default_model: "m", workspace: s.workspace }), "create model profile");
await must(api("POST", `/model-profiles/${mp.id}/assign`, { agent_id: s.agentId }), "assign model profile");

type Row = { scenario: string; round: number; inFlight: number; permitted: number; recorded: number; overshootPct: number; boundPct: number };
const rows: Row[] = [];
const proxies: BenchProxy[] = [];
try {
  for (const [i, url] of [cp1.url, cp2Url].entries()) {
    proxies.push(
      await startBenchProxy({
        token: s.runtimeToken,
        cpUrl: url,
        caFile: model.caFile,
        root,
        command: o.proxy,
        env: { SVC_PROXY_LIMITS_INTERVAL: "15s", SVC_PROXY_POLL_INTERVAL: "1s", SVC_PROXY_HEARTBEAT_INTERVAL: `${10 + i}s` },
      }),
    );
  }
  const scenarios: { name: string; on: BenchProxy[]; workers: number; pauseMs: number }[] = [
    { name: "one proxy, paced", on: [proxies[0]!], workers: 1, pauseMs: 0 },
    { name: "one proxy, burst", on: [proxies[0]!], workers: BURST, pauseMs: 0 },
    { name: "two proxies, paced", on: proxies, workers: 1, pauseMs: 20 },
    { name: "two proxies, burst", on: proxies, workers: BURST, pauseMs: 0 },
  ];
  for (let round = 0; round < o.rounds; round++) {
    for (const [k, sc] of scenarios.entries()) {
      // A user of their own per scenario, linked, with a 3,000-token budget the proxies learn at their next poll.
      const remote = `fe-over-${round}-${k}`;
      const user = await must(api("POST", "/users", { email: `over-${round}-${k}@example.com` }), "create user");
      await must(api("POST", `/users/${user.id}/remote-identities`, { platform: "chatui", remote_user_id: remote }), "link user");
      const name = `over-${round}-${k}`;
      await must(api("POST", "/budgets", { name, scope: "user", target: user.id, period: "day", unit: "tokens", limit: LIMIT }), "create budget");
      for (const px of sc.on) await waitFor(async () => (await (await px.call("/metrics")).text()).includes(`svc_proxy_budget_limit{budget="${name}"}`), "the proxies to know the budget", 60_000);
      let permitted = 0;
      let turn = 0;
      const worker = async (px: BenchProxy | null) => {
        for (let n = 0; n < 1000; n++) {
          const on = px ?? sc.on[turn++ % sc.on.length]!;
          const r = await on.call("/v1/chat/completions", { user: remote, body: { messages: [{ role: "user", content: "hi" }] } });
          await r.text();
          if (r.status !== 200) return;
          permitted++;
          if (sc.pauseMs) await Bun.sleep(sc.pauseMs);
        }
      };
      // paced on two proxies: one caller alternating; a burst: `workers` callers on each proxy
      if (sc.workers === 1) await worker(null);
      else await Promise.all(sc.on.flatMap((px) => Array.from({ length: sc.workers }, async () => worker(px))));
      let recorded = 0;
      await waitFor(
        async () => {
          recorded = (await must(api("GET", "/budgets"), "list budgets")).budgets.find((b: { name: string }) => b.name === name).spent;
          return recorded === permitted * PER_CALL;
        },
        "every call's spend at the control plane",
        60_000,
      );
      const inFlight = sc.workers * sc.on.length;
      // Calls decided on the polled spend because no lease could be asked for (the log says so once a minute).
      const fallbacks = proxies.map((px) => (readFileSync(px.logFile, "utf8").match(/budget leases not renewed[^\n]*/g) ?? []).join(" | ")).filter(Boolean);
      if (fallbacks.length > 0) console.error(`  fallbacks: ${fallbacks.join(" || ").slice(0, 600)}`);
      rows.push({ scenario: sc.name, round, inFlight, permitted, recorded, overshootPct: ((recorded - LIMIT) / LIMIT) * 100, boundPct: ((inFlight * PER_CALL) / LIMIT) * 100 });
      console.error(
        `${sc.name}: ${permitted} calls, ${recorded} tokens, overshoot ${(((recorded - LIMIT) / LIMIT) * 100).toFixed(1)} % (bound ${((inFlight * PER_CALL * 100) / LIMIT).toFixed(0)} %)  (load ${loadavg()})`,
      );
    }
  }
} finally {
  for (const px of proxies) await px.stop();
  cp2.kill("SIGTERM");
  await cp2.exited;
  await cp1.stop();
  await model.stop();
  await pg.stop();
  rmSync(root, { recursive: true, force: true });
  rmSync(cp1.dataDir, { recursive: true, force: true });
}
console.log(`budget ${LIMIT} tokens, ${PER_CALL} tokens a call (${LIMIT / PER_CALL} fit); 2 control-plane replicas on PostgreSQL; proxy: ${o.proxy.join(" ")}`);
console.log(`${"scenario".padEnd(20)} ${"in flight".padStart(9)} ${"calls".padStart(6)} ${"tokens".padStart(7)} ${"overshoot".padStart(10)} ${"bound".padStart(6)}  ok`);
for (const r of rows) {
  console.log(
    `${r.scenario.padEnd(20)} ${String(r.inFlight).padStart(9)} ${String(r.permitted).padStart(6)} ${String(r.recorded).padStart(7)} ${`${r.overshootPct.toFixed(1)} %`.padStart(10)} ${`${r.boundPct.toFixed(0)} %`.padStart(6)}  ${r.overshootPct <= r.boundPct ? "yes" : "NO"}`,
  );
}
console.log(`load average after: ${loadavg()}; ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`);
mkdirSync(join(REPO, "bench/results"), { recursive: true });
writeFileSync(join(REPO, `bench/results/budget-overshoot-${new Date().toISOString().replace(/[:.]/g, "-")}.json`), JSON.stringify({ proxy: o.proxy, limit: LIMIT, perCall: PER_CALL, rows }, null, 2));
process.exit(0);
