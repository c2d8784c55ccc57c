// Issue 9 §1: governed tool decisions from Python over the unix socket, as the governor makes
// them (bench/load/decide_load.py), at concurrency 1, 8 and 64, digest-only and encrypted to
// two recipients, with the durable spool as shipped; each with a connection per call and with
// keep-alive. Also the proxy's own capacity with a
// lighter client (Bun, keep-alive), to separate the proxy from the Python client's cost,
// and the proxy's RSS under load.
import { join } from "node:path";
import type { BenchContext, Suite } from "../lib/context.ts";
import { decideLoad, httpLoad, rssPeak } from "../lib/procs.ts";
import { type Metric, metric } from "../lib/report.ts";

const CONCURRENCY = [1, 8, 64] as const;

export const decisions: Suite = {
  name: "decisions",
  async run(ctx: BenchContext): Promise<Metric[]> {
    const { stack } = ctx;
    const px = stack.proxy;
    const alice = stack.scenario.users.alice!.remote;
    const out: Metric[] = [];
    const args = (c: number) => ["--socket", px.socket, "--concurrency", String(c), "--duration", String(ctx.durationS), "--warmup", "0.5", "--tool", "crm.read", "--user", alice];
    let rssUnderLoad = 0;
    for (const mode of ["digest-only", "2 recipients"] as const) {
      await stack.setEncryption(mode !== "digest-only");
      for (const c of CONCURRENCY) {
        // Connection per call (as svc_chatui did up to 0.1.30) and keep-alive (one persistent
        // connection per client thread, as svc_chatui/_local.py keeps one per event loop),
        // alternating run by run so both see the same machine.
        const runs = { close: { p50: [] as number[], p99: [] as number[], rps: [] as number[] }, keepalive: { p50: [] as number[], p99: [] as number[], rps: [] as number[] } };
        for (let i = 0; i < ctx.runs; i++) {
          for (const conn of ["close", "keepalive"] as const) {
            const rss = rssPeak(px.proc.pid);
            const r = await decideLoad([...args(c), ...(conn === "keepalive" ? ["--keepalive"] : [])], px.token);
            rssUnderLoad = Math.max(rssUnderLoad, rss.stop());
            if (r.errors > 0 || r.answers.permit !== r.count) throw new Error(`decide load at ${c} (${conn}): ${r.errors} errors (${r.error_kinds.join(", ")}), answers ${JSON.stringify(r.answers)}`);
            runs[conn].p50.push(r.p50_ms);
            runs[conn].p99.push(r.p99_ms);
            runs[conn].rps.push(r.rps);
          }
        }
        for (const conn of ["close", "keepalive"] as const) {
          const { p50, p99, rps } = runs[conn];
          ctx.say(`  ${mode} c=${c} ${conn}: p50 ${p50.map((x) => x.toFixed(2)).join("/")} ms, p99 ${p99.map((x) => x.toFixed(2)).join("/")} ms, ${rps.map((x) => x.toFixed(0)).join("/")} /s`);
          const suite = conn === "close" ? "decide (python)" : "decide (py keep-alive)";
          const tag = `${mode}, c=${c}`;
          out.push(metric(suite, `p50 ${tag}`, "ms", p50));
          out.push(metric(suite, `p99 ${tag}`, "ms", p99, c === 8 ? { op: "<=", value: 1 } : undefined));
          out.push(metric(suite, `decisions/s ${tag}`, "/s", rps, mode === "digest-only" && c === 64 ? { op: ">=", value: 10_000 } : undefined));
        }
      }
    }
    await stack.setEncryption(false);

    // The client's own floor: the same Python load against a server that answers at once.
    const nullSocket = join(stack.root, "null.sock");
    const nul = Bun.spawn(["bun", join(import.meta.dir, "../load/null-decide-server.ts"), nullSocket], { stdout: "pipe", stderr: "inherit" });
    await (nul.stdout as ReadableStream<Uint8Array>).getReader().read();
    try {
      for (const c of [8, 64]) {
        for (const conn of ["close", "keepalive"] as const) {
          const p99: number[] = [];
          const rps: number[] = [];
          for (let i = 0; i < ctx.runs; i++) {
            const r = await decideLoad(["--socket", nullSocket, ...args(c).slice(2), ...(conn === "keepalive" ? ["--keepalive"] : [])], px.token);
            p99.push(r.p99_ms);
            rps.push(r.rps);
          }
          const how = conn === "close" ? "" : ", keep-alive";
          out.push(metric("python client floor", `p99 against a null server, c=${c}${how}`, "ms", p99, undefined, "no proxy work at all"));
          out.push(metric("python client floor", `requests/s against a null server, c=${c}${how}`, "/s", rps, undefined, "no proxy work at all"));
        }
      }
    } finally {
      nul.kill("SIGTERM");
      await nul.exited;
    }

    // The proxy with a lighter client: Bun fetch, keep-alive, 64 in flight, in its own process.
    const cap: number[] = [];
    const capP99: number[] = [];
    for (let i = 0; i < ctx.runs; i++) {
      const rss = rssPeak(px.proc.pid);
      const r = await httpLoad({
        url: "http://localhost/v1/tools/decide",
        unix: px.socket,
        method: "POST",
        headers: { authorization: `Bearer ${px.token}`, "content-type": "application/json" },
        body: JSON.stringify({ tool: "crm.read", user: { id: alice }, args: { ticket: 1, query: "status of order 1234", fields: ["status", "eta"] } }),
        mode: "static",
        expectStatus: 200,
        concurrency: 64,
        durationS: ctx.durationS,
        warmupS: 0.5,
      });
      rssUnderLoad = Math.max(rssUnderLoad, rss.stop());
      if (r.errors > 0) throw new Error(`bun decide load: ${r.errors} errors (${r.firstError})`);
      cap.push(r.rps);
      capP99.push(r.p99_ms);
    }
    out.push(metric("decide (bun client)", "decisions/s digest-only, c=64, keep-alive", "/s", cap, undefined, "proxy capacity with a lighter client"));
    out.push(metric("decide (bun client)", "p99 digest-only, c=64, keep-alive", "ms", capP99));
    ctx.facts.proxy_rss_under_load_mb = rssUnderLoad;
    return out;
  },
};
