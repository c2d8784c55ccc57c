// Issue 17: decisions stay flat as the policy count grows, with CEL conditions: 10, 100, 1,000
// and 10,000 policies on the agent (a seventh carry a condition; written as the policies suite
// does), the proxy's tool decision over the socket (Python, concurrency 1) p50/p99 and the
// proxy's CPU per decision, in one run; the ratios to 10 policies are the figures to compare.
import type { Suite } from "../lib/context.ts";
import { type Metric, metric } from "../lib/report.ts";
import { measureDecide } from "./limits.ts";
import { writePolicies } from "./policies.ts";

const COUNTS = [10, 100, 1_000, 10_000] as const;

export const conditions: Suite = {
  name: "conditions",
  async run(ctx) {
    const { stack } = ctx;
    const px = stack.proxy;
    const alice = stack.scenario.users.alice!.remote;
    const out: Metric[] = [];
    const med: Record<number, { p50: number[]; cpu: number[] }> = {};
    for (const count of COUNTS) {
      const rev = (await px.policy()).policy_revision;
      await writePolicies(ctx, count);
      await stack.waitProxyRevision(rev);
      const p50: number[] = [];
      const p99: number[] = [];
      const cpu: number[] = [];
      for (let i = 0; i < ctx.runs; i++) {
        const m = await measureDecide(ctx, px, alice);
        p50.push(m.p50);
        p99.push(m.p99);
        cpu.push(m.cpuUs);
      }
      const label = `${count.toLocaleString("en-US")} policies with conditions`;
      ctx.say(`  ${label}: p50 ${p50.map((x) => x.toFixed(3)).join("/")} ms, p99 ${p99.map((x) => x.toFixed(3)).join("/")} ms, cpu ${cpu.map((x) => x.toFixed(0)).join("/")} µs/decision`);
      out.push(metric("policy count + conditions", `decide p50, ${label}`, "ms", p50));
      out.push(metric("policy count + conditions", `decide p99, ${label}`, "ms", p99));
      out.push(metric("policy count + conditions", `proxy CPU per decision, ${label}`, "µs", cpu));
      med[count] = { p50, cpu };
    }
    const rev = (await px.policy()).policy_revision;
    await writePolicies(ctx, 0);
    await stack.waitProxyRevision(rev);
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    out.push(metric("policy count + conditions", "decide p50 ratio 10,000 / 10 policies", "x", [median(med[10_000]!.p50) / median(med[10]!.p50)], { op: "<=", value: 1.2 }, "flat = within 20 %"));
    out.push(
      metric("policy count + conditions", "CPU per decision ratio 10,000 / 10 policies", "x", [median(med[10_000]!.cpu) / median(med[10]!.cpu)], { op: "<=", value: 1.2 }, "flat = within 20 %"),
    );
    return out;
  },
};
