// Issue 14's two control-plane rates alone, builds side by side:
//   bun bench/controlplane-hot.ts [--rounds N] [--seconds S] [--pg] [--only polls|ingest] [svc-command …]
// Each svc command (default: this checkout's `bun src/main.ts`; a path such as dist/svc, or a
// wrapper script running another checkout) gets its own control plane (SQLite in a temporary
// data dir, or with --pg a PostgreSQL server of the bench's own, fsync on) and scenario; then,
// round by round, every build in turn takes the 304-poll load (64 in flight) and the ingest load
// (batches of 500, 4 in flight), exactly as bench/suites/controlplane.ts sends them. Prints, per
// build, the median rate, the server's CPU per operation and the load client's CPU per
// operation (the client runs on the same 2 cores). Run it under `flock /work/coord/heavy.lock`.
import { adminApi, type Scenario, setUpScenario } from "../src/proxy/testing/integration.ts";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../test/support/controlplane-process.ts";
import { startBenchPostgres } from "./lib/postgres.ts";
import { cpuSeconds, httpLoad } from "./lib/procs.ts";
import { template } from "./suites/controlplane.ts";
import { takeNumber } from "./lib/args.ts";

const argv = process.argv.slice(2);
const opt = (name: string, dflt: number) => takeNumber(argv, name, dflt);
const rounds = opt("--rounds", 3);
const seconds = opt("--seconds", 2);
const pgAt = argv.indexOf("--pg");
const usePg = pgAt >= 0;
if (usePg) argv.splice(pgAt, 1);
const onlyAt = argv.indexOf("--only");
const only = onlyAt >= 0 ? argv.splice(onlyAt, 2)[1] : undefined;
const builds = argv.length > 0 ? argv : [""];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const loadavg = async () => (await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ");

type Target = { name: string; cp: ControlPlaneProcess; scenario: Scenario; etag: string; polls: number[][]; ingest: number[][] };
const targets: Target[] = [];
const pgs: { stop(): Promise<void> }[] = [];
try {
  for (const build of builds) {
    if (build) process.env.SVC_BIN = build;
    else delete process.env.SVC_BIN;
    const env: Record<string, string> = {};
    if (usePg) {
      const pg = await startBenchPostgres();
      if ("skipped" in pg) throw new Error(`PostgreSQL: ${pg.skipped}`);
      pgs.push(pg);
      env.SVC_CP_DATABASE = pg.url;
    }
    const cp = await startControlPlane({ env });
    const scenario = await setUpScenario(adminApi(cp), "hot");
    const first = await fetch(`${cp.url}/api/v1/runtime/policy-bundle?version=1`, { headers: { authorization: `Bearer ${scenario.runtimeToken}` } });
    await first.arrayBuffer();
    targets.push({ name: build || "bun src/main.ts", cp, scenario, etag: first.headers.get("etag")!, polls: [], ingest: [] });
  }
  console.error(`load average before: ${await loadavg()}`);
  for (let r = 0; r < rounds; r++) {
    for (const t of targets) {
      const token = t.scenario.runtimeToken;
      let cpu0 = cpuSeconds(t.cp.proc.pid);
      const p = only === "ingest" ? { rps: 0, errors: 0, firstError: null, clientCpuS: 0 } : await httpLoad({ url: `${t.cp.url}/api/v1/runtime/policy-bundle?version=1`, method: "GET", headers: { authorization: `Bearer ${token}`, "if-none-match": t.etag }, mode: "static", expectStatus: 304, concurrency: 64, durationS: seconds, warmupS: 0.5 });
      if (p.errors > 0) throw new Error(`polls: ${p.errors} errors (${p.firstError})`);
      const pAll = p.rps * (seconds + 0.5);
      t.polls.push([p.rps, ((cpuSeconds(t.cp.proc.pid) - cpu0) / pAll) * 1e6, (p.clientCpuS / pAll) * 1e6]);
      cpu0 = cpuSeconds(t.cp.proc.pid);
      const i = only === "polls" ? { itemsPerS: 0, errors: 0, firstError: null, clientCpuS: 0 } : await httpLoad({ url: `${t.cp.url}/api/v1/runtime/audit-records`, method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, mode: "audit-batch", template: template({ cp: t.cp, scenario: t.scenario, store: usePg ? "PostgreSQL" : "SQLite" }), batch: 500, expectStatus: 200, concurrency: 4, durationS: seconds, warmupS: 0.5 });
      if (i.errors > 0) throw new Error(`ingest: ${i.errors} errors (${i.firstError})`);
      const iAll = i.itemsPerS * (seconds + 0.5);
      t.ingest.push([i.itemsPerS, ((cpuSeconds(t.cp.proc.pid) - cpu0) / iAll) * 1e6, (i.clientCpuS / iAll) * 1e6]);
      console.error(`round ${r + 1} ${t.name}: polls ${p.rps.toFixed(0)}/s, ingest ${i.itemsPerS.toFixed(0)}/s`);
    }
  }
  console.error(`load average after: ${await loadavg()}`);
  const col = (xs: number[][], k: number) => median(xs.map((x) => x[k]!));
  console.log(`| build (${usePg ? "PostgreSQL, fsync on" : "SQLite"}) | 304 polls/s | server µs/poll | client µs/poll | ingest records/s | server µs/record | client µs/record |`);
  console.log("|---|---|---|---|---|---|---|");
  for (const t of targets) {
    console.log(`| ${t.name} | ${col(t.polls, 0).toFixed(0)} | ${col(t.polls, 1).toFixed(1)} | ${col(t.polls, 2).toFixed(1)} | ${col(t.ingest, 0).toFixed(0)} | ${col(t.ingest, 1).toFixed(1)} | ${col(t.ingest, 2).toFixed(1)} |`);
  }
} finally {
  for (const t of targets) {
    await t.cp.stop();
    cleanup(t.cp.dataDir);
  }
  for (const pg of pgs) await pg.stop();
}
process.exit(0);
