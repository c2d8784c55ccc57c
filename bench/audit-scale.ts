// The audit at scale (issue 30): `bun bench/audit-scale.ts [--records 1000000] [--5m] [--cli-only]`, with the
// built binary ($SVC_BIN, default dist/svc) on SQLite. A control plane's store gets N records
// through the runtime ingest API, 5,000 a batch in one proxy chain with valid links, spread over
// the last 60 days; the store is cached between runs (~/.cache/svc-bench/audit-scale-<N>/, a
// copy is used each run, since retention deletes). Then, on a control plane serving that copy,
// while a runtime polls its bundle (304) every 10 ms and another ships a 500-record batch every 100 ms:
//   - an export in chain order (what `svc audit verify` reads), read as fast as it comes;
//   - the control plane's own verification ("Verify now", in the background);
//   - `svc audit verify` on this machine with the key pinned: its time and peak memory;
//   - a retention run deleting the oldest third (background, followed with status polls).
// For each run: its time, and the p50, p99 and longest poll and ingest batch meanwhile, beside
// the same requests with nothing running (the machine's own load). Prints
// a table with the issue's targets and writes bench/results/audit-scale-<time>.json.
import { closeSync, cpSync, existsSync, fsyncSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { AuditChain } from "../src/proxy/audit/chain.ts";
import { newId } from "../src/contract/ids.ts";
import { bootstrapRuntime, createAgent, createInstallation, runtimeRecord } from "../test/integration/cli-support.ts";
import { type ControlPlaneProcess, callApi, freePort, waitFor } from "../test/support/controlplane-process.ts";
import { type Metric, metric, table } from "./lib/report.ts";
import { summarize } from "./lib/stats.ts";

// --cli-only: only `svc audit verify` (its time, memory and the server's CPU meanwhile), for profiling it
const { values } = parseArgs({ options: { records: { type: "string", default: "1000000" }, "5m": { type: "boolean", default: false }, "cli-only": { type: "boolean", default: false } } });
const N = values["5m"] ? 5_000_000 : Number(values.records);
const BIN = resolve(process.env.SVC_BIN ?? "dist/svc");
if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`bun run build\` first`);
const DAY = 86_400_000;
const CACHE = join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "svc-bench", `audit-scale-${N}`);

type Cp = { url: string; token: string; orgId: string; dir: string; proc: ReturnType<typeof Bun.spawn> };
const env = (dir: string, port: number) =>
  ({ ...process.env, XDG_CONFIG_HOME: join(dir, "config"), SVC_CP_DATA_DIR: dir, SVC_CP_LISTEN: `127.0.0.1:${port}`, SVC_CP_PUBLIC_URL: `http://127.0.0.1:${port}` }) as Record<string, string>;
const org = (cp: Cp, path: string) => `/api/v1/organizations/${cp.orgId}${path}`;
const api = async (cp: Cp, method: string, path: string, body?: unknown, token = cp.token) => callApi(cp.url, method, path.startsWith("/api/") ? path : `/api/v1${path}`, body, token);

async function serve(dir: string): Promise<Cp> {
  const port = freePort();
  const proc = Bun.spawn([BIN, "controlplane", "serve"], { env: env(dir, port), stdout: "ignore", stderr: "ignore" });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => (await fetch(`${url}/healthz`)).ok, `control plane at ${url}`, 60_000);
  const { token, orgId } = JSON.parse(readFileSync(join(dir, "bench.json"), "utf8")) as { token: string; orgId: string };
  return { url, token, orgId, dir, proc };
}

async function stop(cp: Cp): Promise<void> {
  cp.proc.kill("SIGTERM");
  await cp.proc.exited;
}

/** A runtime of a new installation (cli-support.ts, as the CLI tests make one) and its records, chained. */
async function runtime(cp: Cp) {
  const asProcess = cp as unknown as ControlPlaneProcess;
  const rt = await bootstrapRuntime(asProcess, (await createInstallation(asProcess, await createAgent(asProcess))).id);
  const chain = new AuditChain();
  const record = (ts: number) => chain.stamp(runtimeRecord(rt, { id: newId("auditRecord", ts), ts: new Date(ts).toISOString() }) as never);
  return { token: rt.token, record };
}

/** The cached store of N records, made once. */
async function cachedStore(): Promise<void> {
  if (existsSync(join(CACHE, "complete"))) return;
  rmSync(CACHE, { recursive: true, force: true });
  mkdirSync(CACHE, { recursive: true });
  const boot = Bun.spawnSync([BIN, "controlplane", "bootstrap-admin", "--email", "owner@example.com", "--org-name", "Bench", "--token-out", join(CACHE, "token")], {
    env: env(CACHE, 0),
    stdout: "pipe",
    stderr: "pipe",
  });
  if (boot.exitCode !== 0) throw new Error(`bootstrap-admin failed: ${boot.stderr.toString()}`);
  const orgId = /organization (org_[0-9A-Z]+)/.exec(boot.stdout.toString())![1]!;
  writeFileSync(join(CACHE, "bench.json"), JSON.stringify({ token: readFileSync(join(CACHE, "token"), "utf8").trim(), orgId }));
  const cp = await serve(CACHE);
  const rt = await runtime(cp);
  const start = Date.now() - 60 * DAY;
  const t0 = performance.now();
  for (let i = 0; i < N; i += 5000) {
    const records = Array.from({ length: Math.min(5000, N - i) }, (_, j) => rt.record(start + Math.floor(((i + j) * 60 * DAY) / N)));
    const r = await api(cp, "POST", "/runtime/audit-records", { records }, rt.token);
    if (r.status !== 200 || r.json.rejected.length > 0) throw new Error(`loading: ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`);
    if (i % 100_000 === 0) process.stderr.write(`loaded ${i.toLocaleString("en-US")} of ${N.toLocaleString("en-US")} (${Math.round(i / ((performance.now() - t0) / 1000))}/s)\n`);
  }
  // signed, so verify covers them
  if ((await api(cp, "POST", org(cp, "/audit-checkpoints"))).status !== 201) throw new Error("the checkpoint was not signed");
  await stop(cp);
  writeFileSync(join(CACHE, "complete"), `${N}\n`);
}

/**
 * Runs `run` while a runtime polls (304) every 10 ms and another ships a 500-record batch every
 * 100 ms (5,000 records/s at most: faster, the store grows under the run and the run with it).
 */
async function during(cp: Cp, run: () => Promise<void>) {
  const poller = await runtime(cp);
  const shipper = await runtime(cp);
  const bundle = `${cp.url}/api/v1/runtime/policy-bundle?version=2`;
  const etag = (await fetch(bundle, { headers: { authorization: `Bearer ${poller.token}` } })).headers.get("etag")!;
  let running = true;
  const waits = { poll: [] as number[], ingest: [] as number[] };
  const loop = async (kind: "poll" | "ingest", send: () => Promise<void>) => {
    const every = kind === "poll" ? 10 : 100;
    while (running) {
      const due = performance.now() + every;
      await Bun.sleep(every);
      await send();
      waits[kind].push(performance.now() - due);
    }
  };
  const loops = Promise.all([
    loop("poll", async () => {
      await (await fetch(bundle, { headers: { authorization: `Bearer ${poller.token}`, "if-none-match": etag } })).arrayBuffer();
    }),
    loop("ingest", async () => {
      const r = await api(cp, "POST", "/runtime/audit-records", { records: Array.from({ length: 500 }, () => shipper.record(Date.now())) }, shipper.token);
      if (r.status !== 200) throw new Error(`an ingest batch answered ${r.status}`);
    }),
  ]);
  const t0 = performance.now();
  await run();
  const ms = performance.now() - t0;
  running = false;
  await loops;
  return { ms, poll: summarize(waits.poll), ingest: summarize(waits.ingest) };
}

async function followed(cp: Cp, path: string, done: (j: any) => boolean): Promise<void> {
  for (;;) {
    const r = await api(cp, "GET", org(cp, path));
    if (done(r.json)) return;
    await Bun.sleep(250);
  }
}

await cachedStore();
const work = mkdtempSync(join(tmpdir(), "svc-bench-audit-scale-"));
cpSync(CACHE, work, { recursive: true });
// The copy on disk before the control plane opens it: its first fsync (a checkpoint's, or a
// commit's through the file system's journal) otherwise writes back what is left of the fresh
// 1.2–7.4 GB copy, and that was the baseline's single stall of 0.9–1.5 s (docs/performance.md).
const copied = openSync(join(work, "controlplane.db"), "r+");
fsyncSync(copied);
closeSync(copied);
const cp = await serve(work);
const metrics: Metric[] = [];
const load = () => `load ${readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")}`;
const record = (name: string, r: Awaited<ReturnType<typeof during>>) => {
  metrics.push(metric("audit-scale", `${name}: time`, "ms", [r.ms], undefined, load()));
  metrics.push(metric("audit-scale", `${name}: poll p99`, "ms", [r.poll.p99], { op: "<=", value: 100 }, `p50 ${Math.round(r.poll.p50)}, longest ${Math.round(r.poll.max)}, ${r.poll.n} polls`));
  metrics.push(
    metric(
      "audit-scale",
      `${name}: ingest batch p99`,
      "ms",
      [r.ingest.p99],
      { op: "<=", value: 100 },
      `p50 ${Math.round(r.ingest.p50)}, longest ${Math.round(r.ingest.max)}, ${r.ingest.n} batches of 500`,
    ),
  );
};
async function longRuns() {
  // the same requests with nothing running: what this machine's load alone costs them
  record("baseline (nothing running)", await during(cp, async () => Bun.sleep(5000)));
  record(
    "export (chain order)",
    await during(cp, async () => {
      const res = await fetch(`${cp.url}${org(cp, "/audit-records/export?order=chain")}`, { headers: { authorization: `Bearer ${cp.token}` } });
      const reader = res.body!.getReader();
      while (!(await reader.read()).done);
    }),
  );
  record(
    "verify now (control plane)",
    await during(cp, async () => {
      await api(cp, "POST", org(cp, "/audit-verifications"));
      await followed(cp, "/audit-verifications/latest", (j) => j.state !== "running");
    }),
  );
}
async function retentionRun() {
  await api(cp, "PATCH", org(cp, "/settings"), { audit_retention_days: 40 });
  let deleted = 0;
  record(
    "retention (a third)",
    await during(cp, async () => {
      await api(cp, "POST", org(cp, "/audit-retention/run"));
      await followed(cp, "/audit-retention/run", (j) => {
        deleted = j.deleted;
        return j.state !== "running";
      });
    }),
  );
  metrics.push(metric("audit-scale", "retention: records deleted", "records", [deleted]));
}
try {
  if (!values["cli-only"]) await longRuns();
  // svc audit verify on this machine, the key pinned: time and peak memory
  const key = (await api(cp, "GET", org(cp, "/audit-signing-key"))).json.public_key as string;
  const home = mkdtempSync(join(tmpdir(), "svc-bench-home-"));
  // CPU seconds of a process so far (utime + stime from /proc, in clock ticks of 10 ms)
  const cpuOf = (pid: number) =>
    readFileSync(`/proc/${pid}/stat`, "utf8")
      .split(") ")[1]!
      .split(" ")
      .slice(11, 13)
      .reduce((x, y) => x + Number(y), 0) / 100;
  const serverCpu0 = cpuOf(cp.proc.pid);
  const t0 = performance.now();
  const cli = Bun.spawn([BIN, "audit", "verify", "--public-key", key, "--json"], {
    env: { ...process.env, HOME: home, XDG_CONFIG_HOME: join(home, ".config"), SVC_CONTROL_PLANE_URL: cp.url, SVC_TOKEN: cp.token },
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = await new Response(cli.stdout).text();
  await cli.exited;
  const cliMs = performance.now() - t0;
  const serverCpu = cpuOf(cp.proc.pid) - serverCpu0;
  // maxRSS in bytes
  const rss = (cli.resourceUsage()?.maxRSS ?? Number.NaN) / (1024 * 1024);
  const report = JSON.parse(out || "{}") as { records?: number; state?: string };
  rmSync(home, { recursive: true, force: true });
  metrics.push(
    metric(
      "audit-scale",
      "svc audit verify: time",
      "ms",
      [cliMs],
      { op: "<=", value: (120_000 * N) / 10_000_000 },
      `${report.records ?? "?"} records, ${report.state ?? `exit ${cli.exitCode}`}; target scaled from 2 min per 10M`,
    ),
  );
  metrics.push(metric("audit-scale", "svc audit verify: peak memory", "MB", [rss], { op: "<=", value: 300 }));
  // what each side spent a record: the CLI's CPU and the control plane's (the export) meanwhile
  const usage = cli.resourceUsage();
  const perRecord = (seconds: number) => (seconds * 1e6) / (report.records ?? Number.NaN);
  metrics.push(metric("audit-scale", "svc audit verify: CLI CPU a record", "µs", [perRecord(usage ? Number(usage.cpuTime.total) / 1e6 : Number.NaN)]));
  metrics.push(metric("audit-scale", "svc audit verify: control plane CPU a record", "µs", [perRecord(serverCpu)]));
  if (!values["cli-only"]) await retentionRun();
} finally {
  await stop(cp);
  rmSync(work, { recursive: true, force: true });
}
console.log(`audit-scale: ${N.toLocaleString("en-US")} records on SQLite (${BIN})`);
console.log(table(metrics));
mkdirSync("bench/results", { recursive: true });
const file = join("bench/results", `audit-scale-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(file, `${JSON.stringify({ records: N, store: "sqlite", metrics }, null, 2)}\n`);
console.log(`wrote ${file}`);
