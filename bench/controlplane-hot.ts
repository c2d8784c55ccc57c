// Issue 14's two control-plane rates alone, builds side by side:
//   bun bench/controlplane-hot.ts [--rounds N] [--seconds S] [--pg] [--only polls|ingest] [svc-command …]
// Each svc command (default: this checkout's `bun src/main.ts`; a path such as dist/svc, or a
// wrapper script running another checkout) gets its own control plane (SQLite in a temporary
// data dir, or with --pg a PostgreSQL server of the bench's own, fsync on) and scenario; then,
// round by round, every build in turn takes the 304-poll load (64 keep-alive connections, from
// wrk and then from the bench's Bun fetch client) and the ingest load (batches of 500, 4 in
// flight), exactly as bench/suites/controlplane.ts sends them. Prints, per build and client, the
// median rate, the server's CPU per operation and the load client's CPU per operation (the
// client runs on the same 2 cores). Run it under `flock /work/coord/heavy.lock`.
import { adminApi, type Scenario, setUpScenario } from "../src/proxy/testing/integration.ts";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../test/support/controlplane-process.ts";
import { startBenchPostgres } from "./lib/postgres.ts";
import { cpuSeconds, httpLoad } from "./lib/procs.ts";
import { wrkPolls } from "./lib/wrk.ts";
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

type Target = { name: string; cp: ControlPlaneProcess; scenario: Scenario; etag: string; polls: number[][]; fetchPolls: number[][]; ingest: number[][] };
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
    targets.push({ name: build || "bun src/main.ts", cp, scenario, etag: first.headers.get("etag")!, polls: [], fetchPolls: [], ingest: [] });
  }
  console.error(`load average before: ${await loadavg()}`);
  for (let r = 0; r < rounds; r++) {
    for (const t of targets) {
      const token = t.scenario.runtimeToken;
      const pollUrl = `${t.cp.url}/api/v1/runtime/policy-bundle?version=1`;
      const pollHeaders = { authorization: `Bearer ${token}`, "if-none-match": t.etag };
      let w = { rps: 0 };
      let f = { rps: 0 };
      if (only !== "ingest") {
        // wrk: a short warm-up run, then the measured one (server CPU over that run only)
        await wrkPolls({ url: pollUrl, headers: pollHeaders, connections: 64, durationS: 1 });
        const c0 = cpuSeconds(t.cp.proc.pid);
        const wr = await wrkPolls({ url: pollUrl, headers: pollHeaders, connections: 64, durationS: seconds });
        t.polls.push([wr.rps, ((cpuSeconds(t.cp.proc.pid) - c0) / wr.requests) * 1e6, (wr.clientCpuS / wr.requests) * 1e6]);
        w = wr;
        // the bench's Bun fetch client, 64 in flight (warm-up included on both sides)
        const c1 = cpuSeconds(t.cp.proc.pid);
        const p = await httpLoad({ url: pollUrl, method: "GET", headers: pollHeaders, mode: "static", expectStatus: 304, concurrency: 64, durationS: seconds, warmupS: 0.5 });
        if (p.errors > 0) throw new Error(`polls (Bun fetch): ${p.errors} errors (${p.firstError})`);
        const pAll = p.rps * (seconds + 0.5);
        t.fetchPolls.push([p.rps, ((cpuSeconds(t.cp.proc.pid) - c1) / pAll) * 1e6, (p.clientCpuS / pAll) * 1e6]);
        f = p;
      }
      const cpu0 = cpuSeconds(t.cp.proc.pid);
      const i =
        only === "polls"
          ? { itemsPerS: 0, errors: 0, firstError: null, clientCpuS: 0 }
          : await httpLoad({
              url: `${t.cp.url}/api/v1/runtime/audit-records`,
              method: "POST",
              headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
              mode: "audit-batch",
              template: template({ cp: t.cp, scenario: t.scenario, store: usePg ? "PostgreSQL" : "SQLite" }),
              batch: 500,
              expectStatus: 200,
              concurrency: 4,
              durationS: seconds,
              warmupS: 0.5,
            });
      if (i.errors > 0) throw new Error(`ingest: ${i.errors} errors (${i.firstError})`);
      const iAll = i.itemsPerS * (seconds + 0.5);
      t.ingest.push([i.itemsPerS, ((cpuSeconds(t.cp.proc.pid) - cpu0) / iAll) * 1e6, (i.clientCpuS / iAll) * 1e6]);
      console.error(`round ${r + 1} ${t.name}: polls ${w.rps.toFixed(0)}/s (wrk), ${f.rps.toFixed(0)}/s (Bun fetch), ingest ${i.itemsPerS.toFixed(0)}/s`);
    }
  }
  console.error(`load average after: ${await loadavg()}`);
  const col = (xs: number[][], k: number) => median(xs.map((x) => x[k]!));
  const store = usePg ? "PostgreSQL, fsync on" : "SQLite";
  const med = (xs: number[][], k: number, digits: number) => (xs.length ? col(xs, k).toFixed(digits) : "–");
  if (only !== "ingest") {
    console.log(`| build (${store}) | load client | 304 polls/s | server µs/poll | client µs/poll |`);
    console.log("|---|---|---|---|---|");
    for (const t of targets) {
      console.log(`| ${t.name} | wrk, 64 connections | ${med(t.polls, 0, 0)} | ${med(t.polls, 1, 1)} | ${med(t.polls, 2, 1)} |`);
      console.log(`| ${t.name} | Bun fetch client, 64 in flight | ${med(t.fetchPolls, 0, 0)} | ${med(t.fetchPolls, 1, 1)} | ${med(t.fetchPolls, 2, 1)} |`);
    }
  }
  if (only !== "polls") {
    console.log(`| build (${store}) | ingest records/s | server µs/record | client µs/record |`);
    console.log("|---|---|---|---|");
    for (const t of targets) console.log(`| ${t.name} | ${med(t.ingest, 0, 0)} | ${med(t.ingest, 1, 1)} | ${med(t.ingest, 2, 1)} |`);
  }
} finally {
  for (const t of targets) {
    await t.cp.stop();
    cleanup(t.cp.dataDir);
  }
  for (const pg of pgs) await pg.stop();
}
process.exit(0);
