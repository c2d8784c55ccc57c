// What tracing costs a decision (issue 35): a real daemon answering pack-tool decisions (the
// spool's fdatasync included) with tracing off (the default: no OTEL_* variables, requests
// without traceparent) and on (spans exported to a real OpenTelemetry Collector, requests with
// Open WebUI's traceparent, every span sampled), alternating in rounds, one decision at a time
// over the unix socket. Prints p50/p99 per mode and round and the medians' ratio; on a shared
// machine only ratios within one run mean anything.
//   bun bench/tracing-overhead.ts [--rounds 3] [--calls 1000]
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { silentLogger } from "../src/log/index.ts";
import { loadConfig } from "../src/proxy/config.ts";
import { startDaemon } from "../src/proxy/daemon.ts";
import { bundleIdentity, bundleTool, fakeBundle } from "../src/proxy/testing/bundle.ts";
import { daemonEnv, startFakeControlPlane } from "../src/proxy/testing/fake-control-plane.ts";
import { startCollector } from "../test/support/otel-collector.ts";
import { median, summarize } from "./lib/stats.ts";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const ROUNDS = arg("rounds", 3);
const CALLS = arg("calls", 1000);
const TOKEN = "svc_rt_bench_tracing";

const collector = await startCollector();
const cp = startFakeControlPlane(
  fakeBundle({
    tools: [bundleTool("crm.read")],
    policies: [{ id: "pol_1", name: "readers", src: "group:sales", dst: "tool:crm.read", effect: "permit" }],
    identities: [bundleIdentity("alice", ["sales"])],
  }),
  TOKEN,
);

async function run(mode: "off" | "on"): Promise<number[]> {
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-tracing-"));
  const otelEnv = mode === "on" ? { OTEL_EXPORTER_OTLP_ENDPOINT: collector.httpEndpoint, OTEL_SERVICE_NAME: "svc-proxy-bench" } : {};
  const daemon = await startDaemon(loadConfig(daemonEnv(cp, dir)), silentLogger, { otelEnv });
  for (let i = 0; i < 400 && daemon.status.state !== "ready"; i++) await Bun.sleep(25);
  const body = JSON.stringify({ tool: "crm.read", user: { id: "fe-alice" }, args: { q: "hello", n: 3 } });
  const decide = async (i: number) => {
    const headers: Record<string, string> = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
    if (mode === "on") headers.traceparent = `00-${(i + 1).toString(16).padStart(32, "0")}-00f067aa0ba902b7-01`;
    const r = await fetch("http://localhost/v1/tools/decide", { unix: join(dir, "p.sock"), method: "POST", headers, body } as RequestInit);
    if (((await r.json()) as { decision: string }).decision !== "permit") throw new Error("not a permit");
  };
  for (let i = 0; i < 200; i++) await decide(i); // warm-up
  const ms: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const t = performance.now();
    await decide(i);
    ms.push(performance.now() - t);
  }
  await daemon.shutdown(3000);
  rmSync(dir, { recursive: true, force: true });
  return ms;
}

const p50s: Record<"off" | "on", number[]> = { off: [], on: [] };
for (let round = 1; round <= ROUNDS; round++) {
  for (const mode of ["off", "on"] as const) {
    const s = summarize(await run(mode));
    p50s[mode].push(s.p50);
    console.log(`round ${round} tracing ${mode.padEnd(3)}  decision p50 ${s.p50.toFixed(3)} ms  p99 ${s.p99.toFixed(3)} ms  (${s.n} calls)`);
  }
}
const [off, on] = [median(p50s.off), median(p50s.on)];
console.log(`median p50: off ${off.toFixed(3)} ms, on ${on.toFixed(3)} ms: on/off ${(on / off).toFixed(3)}x (+${(on - off).toFixed(3)} ms)`);
console.log(`spans the Collector passed on: ${collector.spans().length}`);
await cp.stop();
await collector.stop();
