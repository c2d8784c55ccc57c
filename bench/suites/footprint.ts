// Issue 9 §5: `svc proxy serve` from spawn to the first 200 on /readyz (fresh state dir each
// time: identity generation, bootstrap, first bundle), the binary's size, and the proxy's RSS
// idle (2 s after ready) and at its peak under decision load (Python, concurrency 64).
import { statSync } from "node:fs";
import type { BenchContext, Suite } from "../lib/context.ts";
import { decideLoad, rssMb, rssPeak } from "../lib/procs.ts";
import { type Metric, metric } from "../lib/report.ts";
import { BINARY, startBenchProxy } from "../lib/stack.ts";

export const footprint: Suite = {
  name: "footprint",
  async run(ctx: BenchContext): Promise<Metric[]> {
    const { stack } = ctx;
    const start: number[] = [];
    const idle: number[] = [];
    const loaded: number[] = [];
    const starts = ctx.quick ? 3 : 5;
    for (let i = 0; i < starts; i++) {
      const px = await startBenchProxy({ token: stack.scenario.runtimeToken, cpUrl: stack.cp.url, caFile: stack.model.caFile, root: stack.root });
      try {
        start.push(px.startMs);
        if (i < ctx.runs) {
          await Bun.sleep(2000);
          idle.push(rssMb(px.proc.pid));
          const peak = rssPeak(px.proc.pid);
          await decideLoad(
            ["--socket", px.socket, "--concurrency", "64", "--duration", String(Math.min(ctx.durationS, 3)), "--warmup", "0.3", "--tool", "crm.read", "--user", stack.scenario.users.alice!.remote],
            px.token,
          );
          loaded.push(peak.stop());
        }
      } finally {
        await px.stop();
      }
    }
    ctx.say(`  start→ready ${start.map((x) => x.toFixed(0)).join("/")} ms; RSS idle ${idle.map((x) => x.toFixed(0)).join("/")} MB, under load ${loaded.map((x) => x.toFixed(0)).join("/")} MB`);
    return [
      metric("footprint", "svc proxy serve start → ready", "ms", start, undefined, "fresh state dir: identity, bootstrap, first bundle"),
      metric("footprint", "binary size (dist/svc)", "MB", [statSync(BINARY).size / 1e6]),
      metric("footprint", "proxy RSS idle", "MB", idle),
      metric("footprint", "proxy RSS peak under load (c=64)", "MB", loaded),
    ];
  },
};
