// Issue 14's control-plane targets on PostgreSQL, in the same run as SQLite (`--peers`, or
// `--only controlplane-pg`): audit ingest (target 25,000 records/s) and bundle polls answered
// 304 (20,000/s), against a second control plane on a PostgreSQL server of the bench's own
// with fsync on (bench/lib/postgres.ts). The 1M-record search and export stay in the
// `controlplane` suite (run it with SVC_TEST_POSTGRES_URL for those on PostgreSQL).
import { adminApi, setUpScenario } from "../../src/proxy/testing/integration.ts";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../../test/support/controlplane-process.ts";
import type { Suite } from "../lib/context.ts";
import { startBenchPostgres } from "../lib/postgres.ts";
import { metric } from "../lib/report.ts";
import { ingestMetrics, pollMetrics } from "./controlplane.ts";

export const controlplanePg: Suite = {
  name: "controlplane-pg",
  async run(ctx) {
    const pg = await startBenchPostgres();
    if ("skipped" in pg) return [metric("control plane", "PostgreSQL ingest and 304 polls", "", [Number.NaN], undefined, `skipped: ${pg.skipped}`)];
    let cp: ControlPlaneProcess | null = null;
    try {
      ctx.say("  control plane on a durable PostgreSQL (fsync on)");
      cp = await startControlPlane({ env: { SVC_CP_DATABASE: pg.url } });
      const scenario = await setUpScenario(adminApi(cp), "benchpg");
      const target = { cp, scenario, store: "PostgreSQL" as const };
      return [...(await ingestMetrics(ctx, target)), ...(await pollMetrics(ctx, target))];
    } finally {
      if (cp) {
        await cp.stop();
        cleanup(cp.dataDir);
      }
      await pg.stop();
    }
  },
};
