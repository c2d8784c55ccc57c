// Issue 16: the decision path's cost with budgets and rate limits configured, beside the same
// path without them, in one run. Two proxies of the same installation: the stack's own (no
// SVC_PROXY_RATE_LIMITS) and one with four rate-limit rules (set so high nothing is refused)
// and a 1 s limits poll, after two budgets (alice's and her group's) exist, so every call goes
// through the buckets and the budgets are fetched. Runs alternate between the two proxies.
// Measured: the tool decision over the socket (Python, concurrency 1) p50/p99 and the proxy's
// CPU per decision (/proc, user + system).
import type { BenchContext, Suite } from "../lib/context.ts";
import { cpuSeconds, decideLoad } from "../lib/procs.ts";
import { type Metric, metric } from "../lib/report.ts";
import { type BenchProxy, startBenchProxy } from "../lib/stack.ts";
import { must } from "../../src/proxy/testing/integration.ts";

const HIGH = 100_000_000;
export const RATE_RULES = `user=${HIGH}/min,tool=${HIGH}/min,tool:crm.read=${HIGH}/min,model=${HIGH}/min`;

/** One timed run: p50, p99 (ms) and the proxy's CPU µs per decision. */
export async function measureDecide(ctx: BenchContext, px: BenchProxy, user: string): Promise<{ p50: number; p99: number; cpuUs: number }> {
  const cpu0 = cpuSeconds(px.proc.pid);
  const r = await decideLoad(["--socket", px.socket, "--concurrency", "1", "--duration", String(Math.min(ctx.durationS, 2)), "--warmup", "0.3", "--tool", "crm.read", "--user", user], px.token);
  const cpu = cpuSeconds(px.proc.pid) - cpu0;
  if (r.errors > 0 || r.answers.permit !== r.count) throw new Error(`decide: ${r.errors} errors, answers ${JSON.stringify(r.answers)}`);
  return { p50: r.p50_ms, p99: r.p99_ms, cpuUs: (cpu * 1e6) / r.count };
}

export const limits: Suite = {
  name: "limits",
  async run(ctx) {
    const { stack } = ctx;
    const alice = stack.scenario.users.alice!;
    const budgets = [
      await must(stack.api("POST", "/budgets", { name: `bench-alice-${Date.now()}`, scope: "user", target: alice.email, period: "day", unit: "tokens", limit: 1e12 }), "create user budget"),
      await must(stack.api("POST", "/budgets", { name: `bench-sales-${Date.now()}`, scope: "group", target: "sales-bench", period: "month", unit: "tokens", limit: 1e12 }), "create group budget"),
    ];
    const limited = await startBenchProxy({
      token: stack.scenario.runtimeToken,
      cpUrl: stack.cp.url,
      caFile: stack.model.caFile,
      root: stack.root,
      env: { SVC_PROXY_RATE_LIMITS: RATE_RULES, SVC_PROXY_LIMITS_INTERVAL: "1s" },
    });
    const out: Metric[] = [];
    try {
      // the limited proxy has fetched the budgets before it is measured
      for (let i = 0; (await (await limited.call("/metrics")).text()).match(/^svc_proxy_budgets (\d+)/m)?.[1] !== "2"; i++) {
        if (i > 200) throw new Error("the limited proxy did not fetch the two budgets");
        await Bun.sleep(50);
      }
      await measureDecide(ctx, limited, alice.remote); // a fresh process: warm it as the stack's proxy already is
      const runs = { base: { p50: [] as number[], p99: [] as number[], cpu: [] as number[] }, limited: { p50: [] as number[], p99: [] as number[], cpu: [] as number[] } };
      for (let i = 0; i < ctx.runs; i++) {
        for (const [k, px] of [
          ["base", stack.proxy],
          ["limited", limited],
        ] as const) {
          const m = await measureDecide(ctx, px, alice.remote);
          runs[k].p50.push(m.p50);
          runs[k].p99.push(m.p99);
          runs[k].cpu.push(m.cpuUs);
        }
      }
      for (const k of ["base", "limited"] as const) {
        const tag = k === "base" ? "no budgets or rate limits" : "2 budgets + 4 rate-limit rules";
        ctx.say(
          `  ${tag}: p50 ${runs[k].p50.map((x) => x.toFixed(3)).join("/")} ms, p99 ${runs[k].p99.map((x) => x.toFixed(3)).join("/")} ms, cpu ${runs[k].cpu.map((x) => x.toFixed(0)).join("/")} µs/decision`,
        );
        out.push(metric("budgets + rate limits", `decide p50, ${tag}`, "ms", runs[k].p50));
        out.push(metric("budgets + rate limits", `decide p99, ${tag}`, "ms", runs[k].p99));
        out.push(metric("budgets + rate limits", `proxy CPU per decision, ${tag}`, "µs", runs[k].cpu));
      }
      const ratio = (xs: number[], ys: number[]) => xs.map((x, i) => x / ys[i]!);
      out.push(metric("budgets + rate limits", "decide p50 ratio limited / none", "x", ratio(runs.limited.p50, runs.base.p50), { op: "<=", value: 1.1 }, "same run, alternating"));
      out.push(metric("budgets + rate limits", "CPU per decision ratio limited / none", "x", ratio(runs.limited.cpu, runs.base.cpu), { op: "<=", value: 1.1 }, "same run, alternating"));
    } finally {
      await limited.stop();
      for (const b of budgets) await stack.api("DELETE", `/budgets/${b.id}`);
    }
    return out;
  },
};
