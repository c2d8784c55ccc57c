// The proxy's CPU for shipping a spooled backlog (issue 14: records shipped as their spooled
// lines, never parsed and serialized again), builds side by side:
//   bun bench/shipper-drain.ts [--records N] [--rounds R] [--no-digest|--no-sealed] [checkout …]
// Each checkout (default: this one) is a source tree whose src/proxy/audit spool and shipper
// and src/proxy/link client are loaded in a child process. The child fills a spool directory
// with N records (digest-only, then sealed with 2 KB of ciphertext; segment files written
// as the proxy writes them), opens it, and ships it all through the real client to a stand-in
// control plane served by this process (it parses each body and acknowledges every id; its CPU
// is not counted). The child reports its own CPU (user + system) and wall time from the
// shipper's start to an empty spool, so the acknowledgement fsyncs are in, the reload is not.
// Rounds alternate the builds. Also the drain process's peak RSS (issue 34: ≤ 150 MB at 1M
// unshipped records; the spool is filled by this process first, so the drain's heap starts
// clean). Prints a table and writes bench/results/shipper-drain-<ts>.json.
// Run it under `flock /work/coord/heavy.lock`: the machine is shared and noisy.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { takeNumber } from "./lib/args.ts";

const argv = process.argv.slice(2);
const opt = (name: string, dflt: number) => takeNumber(argv, name, dflt);
const KINDS = ["digest", "sealed"] as const;
type Kind = (typeof KINDS)[number];
type Result = { cpuS: number; wallS: number; records: number; bodyBytes: number; peakRssMb: number; openRssMb: number; maxLagMs: number; p99LagMs: number };

if (argv[0] === "--child") {
  const [, checkout, dir, records, url] = argv as [string, string, string, string, string];
  console.log(JSON.stringify(await child(checkout, dir, Number(records), url)));
  process.exit(0);
}

const records = opt("--records", 50_000);
const rounds = opt("--rounds", 3);
const kinds = KINDS.filter((k) => !argv.includes(`--no-${k}`));
const trees = argv.filter((a) => !a.startsWith("--no-"));
const checkouts = (trees.length > 0 ? trees : [resolve(import.meta.dir, "..")]).map((c) => resolve(c));
let bodyBytes = 0;
let answered = 0;
const server = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    const text = await req.text();
    bodyBytes += text.length;
    const ids = (JSON.parse(text) as { records: { id: string }[] }).records.map((r) => r.id);
    answered += ids.length;
    return Response.json({ acknowledged: ids, inserted: ids.length, duplicates: 0 });
  },
});
const loadavg = async () => (await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ");
const results: { checkout: string; kind: Kind; round: number; cpuUsPerRecord: number; recordsPerS: number; peakRssMb: number; openRssMb: number; maxLagMs: number; p99LagMs: number }[] = [];
console.error(`load average before: ${await loadavg()}`);
for (let r = 0; r < rounds; r++) {
  for (const kind of kinds) {
    for (const checkout of checkouts) {
      // Written here, so the drain's process starts with none of the filling's garbage in its heap.
      const dir = await fill(checkout, kind, records);
      try {
        const p = Bun.spawn(["bun", import.meta.path, "--child", checkout, dir, String(records), `http://127.0.0.1:${server.port}`], { stdout: "pipe", stderr: "inherit" });
        const out = await new Response(p.stdout).text();
        if ((await p.exited) !== 0) throw new Error(`child failed for ${checkout}`);
        const res = JSON.parse(out.trim().split("\n").at(-1)!) as Result;
        results.push({
          checkout,
          kind,
          round: r,
          cpuUsPerRecord: (res.cpuS * 1e6) / res.records,
          recordsPerS: res.records / res.wallS,
          peakRssMb: res.peakRssMb,
          openRssMb: res.openRssMb,
          maxLagMs: res.maxLagMs,
          p99LagMs: res.p99LagMs,
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
}
const after = await loadavg();
void server.stop(true);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`\n${records.toLocaleString("en-US")} records per drain, ${rounds} rounds, builds alternating, collection ${process.env.SVC_BENCH_GC ?? "sync"}; load average after: ${after}`);
console.log(
  "| checkout | records | proxy CPU per record (median, all rounds) | drain rate (median) | peak RSS (median; target ≤ 150 MB at 1M) | RSS once opened | event-loop lag p99 / max (median) |",
);
console.log("|---|---|---|---|---|---|---|");
for (const kind of kinds) {
  for (const checkout of checkouts) {
    const mine = results.filter((x) => x.kind === kind && x.checkout === checkout);
    const cpu = mine.map((x) => x.cpuUsPerRecord);
    console.log(
      `| ${checkout} | ${kind} | ${median(cpu).toFixed(1)} µs (${cpu.map((x) => x.toFixed(1)).join(" / ")}) | ${Math.round(median(mine.map((x) => x.recordsPerS))).toLocaleString("en-US")}/s | ${median(mine.map((x) => x.peakRssMb)).toFixed(0)} MB (${mine.map((x) => x.peakRssMb.toFixed(0)).join(" / ")}) | ${median(mine.map((x) => x.openRssMb)).toFixed(0)} MB | ${median(mine.map((x) => x.p99LagMs)).toFixed(1)} / ${median(mine.map((x) => x.maxLagMs)).toFixed(1)} ms |`,
    );
  }
}
mkdirSync(join(import.meta.dir, "results"), { recursive: true });
const file = join(import.meta.dir, "results", `shipper-drain-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(file, JSON.stringify({ records, rounds, collection: process.env.SVC_BENCH_GC ?? "sync", loadAfter: after, answered, bodyBytes, results }, null, 2));
console.log(`\nwrote ${file}`);

/** A spool directory of `n` records of one kind, segment files as the proxy writes them. */
async function fill(checkout: string, kind: Kind, n: number): Promise<string> {
  const { DEFAULT_SEGMENT_MAX_BYTES } = (await import(join(checkout, "src/proxy/audit/spool.ts"))) as typeof import("../src/proxy/audit/spool.ts");
  const { segName } = (await import(join(checkout, "src/proxy/audit/spool-files.ts"))) as typeof import("../src/proxy/audit/spool-files.ts");
  const { newId } = (await import(join(checkout, "src/contract/ids.ts"))) as typeof import("../src/contract/ids.ts");
  const dir = mkdtempSync(join(tmpdir(), "svc-ship-bench-"));
  {
    const ciphertext = kind === "sealed" ? Buffer.alloc(1500, 7).toString("base64") : null;
    let seq = 1;
    let chunk: string[] = [];
    let bytes = 0;
    const flush = () => {
      writeFileSync(join(dir, segName(seq++, "jsonl")), chunk.join(""));
      chunk = [];
      bytes = 0;
    };
    const now = Date.now();
    for (let i = 0; i < n; i++) {
      const line = `${JSON.stringify({
        id: newId("auditRecord"),
        ts: new Date(now - n + i).toISOString(),
        kind: "tool",
        harness: "chatui",
        organization_id: "org_01BENCHSHIPORG00000000000",
        workspace_id: "ws_01BENCHSHIPWORKSPACE000000",
        installation_id: "inst_01BENCHSHIPINSTALL000000",
        agent_id: "agt_01BENCHSHIPAGENT000000000",
        replica_id: "rep_01BENCHSHIPREPLICA0000000",
        action: "tool:crm.read",
        tool_name: "crm.read",
        decision: "permit",
        reason: "policy",
        policy_id: "pol_01BENCHSHIPPOLICY00000000",
        policy_revision: 3,
        subject: { user_id: "usr_01BENCHSHIPUSER0000000000", remote_user_id: "fe-alice", via_installation: false },
        args_digest: `hmac-sha256:${(i.toString(16) + "0".repeat(64)).slice(0, 64)}`,
        digest_key_id: "dk_01BENCHSHIPDIGESTKEY000000",
        recipient_key_ids: ciphertext ? ["rk_01BENCHSHIPRECIPIENT00000"] : [],
        chain_id: "chn_01BENCHSHIPCHAIN0000000000",
        chain_seq: i + 1,
        chain_prev: i === 0 ? null : "ab".repeat(32),
        ciphertext,
      })}\n`;
      chunk.push(line);
      bytes += line.length;
      if (bytes >= DEFAULT_SEGMENT_MAX_BYTES) flush();
    }
    if (chunk.length > 0) flush();
  }
  return dir;
}

/** One drain in this (child) process with the checkout's own spool, shipper and client; its peak RSS sampled every 20 ms. */
async function child(checkout: string, dir: string, n: number, url: string): Promise<Result> {
  const { AuditSpool } = (await import(join(checkout, "src/proxy/audit/spool.ts"))) as typeof import("../src/proxy/audit/spool.ts");
  const { AuditShipper } = (await import(join(checkout, "src/proxy/audit/shipper.ts"))) as typeof import("../src/proxy/audit/shipper.ts");
  const { ControlPlaneClient } = (await import(join(checkout, "src/proxy/link/control-plane-client.ts"))) as typeof import("../src/proxy/link/control-plane-client.ts");
  let peak = 0;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss());
  }, 20);
  // How late a 5 ms timer fires while the backlog drains: what a decision waiting on this event
  // loop would wait extra (the collection below runs on it).
  const lags: number[] = [];
  let due = performance.now() + 5;
  const lagTimer = setInterval(() => {
    const t = performance.now();
    lags.push(Math.max(0, t - due));
    due = t + 5;
  }, 5);
  {
    const spool = await AuditSpool.open(dir);
    const openRssMb = process.memoryUsage.rss() / 2 ** 20;
    const client = new ControlPlaneClient({ baseUrl: url, token: "svc_rt_bench", version: "bench", egressProxy: null, noProxy: [], ca: null });
    const log = { info() {}, warn() {}, error() {} } as unknown as ConstructorParameters<typeof AuditShipper>[0]["log"];
    // SVC_BENCH_GC: how the shipper collects while draining (sync: Bun.gc(true), the default; async: Bun.gc(false); none).
    const gc = process.env.SVC_BENCH_GC;
    const collect = gc === "async" ? { collect: () => void Bun.gc(false) } : gc === "none" ? { collectEveryRecords: 0 } : {};
    const shipper = new AuditShipper({ spool, client, log, lingerMs: 0, ...collect });
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    shipper.start();
    while (spool.depth > 0) await Bun.sleep(2);
    const wallS = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    await shipper.stop();
    await spool.close();
    clearInterval(sampler);
    clearInterval(lagTimer);
    lags.sort((a, b) => a - b);
    const p99LagMs = lags[Math.floor(lags.length * 0.99)] ?? 0;
    return { cpuS: (cpu.user + cpu.system) / 1e6, wallS, records: n, bodyBytes: 0, peakRssMb: Math.max(peak, process.memoryUsage.rss()) / 2 ** 20, openRssMb, maxLagMs: lags.at(-1) ?? 0, p99LagMs };
  }
}
