// One run per organization across replicas sharing a database: a run is claimed by one
// conditional insert, so concurrent starts on several replicas make one run, which the others
// join (waiting for its record), and the scheduler of every replica leaves it alone.
import { describe, expect, test } from "bun:test";
import { tables } from "../db/index.ts";
import { testControlPlane } from "../testing.ts";
import { settingsBody } from "./fixtures.ts";
import { actingAsSystem } from "../audit/admin-events.ts";
import { runSync, startIfDue, stopRuns } from "./service.ts";

describe("directory sync run claim", () => {
  test("concurrent runs on four replicas: one run, joined by all; schedulers skip it", async () => {
    const cp = await testControlPlane();
    // A TLS endpoint that never answers keeps the run in progress until it is stopped.
    const sink = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {}, open() {} } });
    try {
      const url = `https://127.0.0.1:${sink.port}`;
      const saved = await cp.call("PUT", cp.org("/directory-sync"), {
        body: settingsBody({ authority_url: url, graph_url: url }),
      });
      expect(saved.status).toBe(200);
      const replicas = Array.from({ length: 4 }, () => ({ ...cp.deps }));
      const pending = replicas.map(async (deps) => runSync(deps, cp.orgId, actingAsSystem(deps, "directory-sync")));
      const runsTable = tables(cp.deps.db).directorySyncRuns;
      let runs = await cp.deps.db.select().from(runsTable);
      for (let i = 0; i < 100 && runs.length === 0; i++) {
        await Bun.sleep(10);
        runs = await cp.deps.db.select().from(runsTable);
      }
      await Bun.sleep(100);
      runs = await cp.deps.db.select().from(runsTable);
      expect(runs).toHaveLength(1);
      expect(runs[0]!.status).toBe("running");

      const c = tables(cp.deps.db).directorySyncConfigs;
      await cp.deps.db.update(c).set({ enabled: true });
      const [config] = await cp.deps.db.select().from(c);
      expect(await Promise.all(replicas.map(async (deps) => startIfDue(deps, config!, actingAsSystem(deps, "directory-sync"))))).toEqual([false, false, false, false]);

      for (const deps of replicas) await stopRuns(deps);
      const reports = await Promise.all(pending);
      expect(reports.map((r) => r.id)).toEqual([runs[0]!.id, runs[0]!.id, runs[0]!.id, runs[0]!.id]);
      expect(reports[0]!.status).toBe("failed");
      expect(await cp.deps.db.select().from(runsTable)).toHaveLength(1);
    } finally {
      sink.stop(true);
    }
  });

  test("the scheduler's claim: due once per interval, on one replica only", async () => {
    let now = 1_750_000_000_000;
    const cp = await testControlPlane({ now: () => now });
    const c = tables(cp.deps.db).directorySyncConfigs;
    const wrapped = cp.deps.kms.wrap(new TextEncoder().encode("s"), `directory-sync:${cp.orgId}`);
    // An unreachable authority: each run fails at once, which is all this test needs.
    await cp.deps.db.insert(c).values({
      orgId: cp.orgId,
      tenantId: "t",
      clientId: "c",
      appId: "a",
      wrappedClientSecret: wrapped,
      dryRun: true,
      createUsers: false,
      authorityUrl: "https://127.0.0.1:1",
      graphUrl: "https://127.0.0.1:1",
      intervalSeconds: 600,
      enabled: true,
      updatedAt: now,
    });
    const [config] = await cp.deps.db.select().from(c);
    const replicas = Array.from({ length: 4 }, () => ({ ...cp.deps, now: () => now }));
    const runsTable = tables(cp.deps.db).directorySyncRuns;
    const settle = async () => {
      for (const deps of replicas) await stopRuns(deps);
    };
    expect((await Promise.all(replicas.map(async (deps) => startIfDue(deps, config!, actingAsSystem(deps, "directory-sync"))))).filter(Boolean)).toHaveLength(1);
    await settle();
    now += 599_000;
    expect((await Promise.all(replicas.map(async (deps) => startIfDue(deps, config!, actingAsSystem(deps, "directory-sync"))))).filter(Boolean)).toHaveLength(0);
    now += 1_000;
    expect((await Promise.all(replicas.map(async (deps) => startIfDue(deps, config!, actingAsSystem(deps, "directory-sync"))))).filter(Boolean)).toHaveLength(1);
    await settle();
    expect(await cp.deps.db.select().from(runsTable)).toHaveLength(2);
    // Disabled: no claim, whatever the interval.
    await cp.deps.db.update(c).set({ enabled: false });
    now += 3_600_000;
    expect((await Promise.all(replicas.map(async (deps) => startIfDue(deps, config!, actingAsSystem(deps, "directory-sync"))))).filter(Boolean)).toHaveLength(0);
  });
});
