// The proxy daemon's life against a real control-plane process: polling with 304 through the
// egress proxy (and NO_PROXY bypassing it), the control plane going down and coming back,
// restart on the persisted bundle while the control plane is down, SIGTERM draining the
// spool, and kill -9 under load with every answered record arriving exactly once.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { type ControlPlaneProcess, startControlPlane, svcCommand } from "../support/controlplane-process.ts";
import { lineRecordId, spoolLines } from "../../src/proxy/audit/spool-files.ts";
import { gateSpoolIndexing } from "../../src/proxy/testing/spool-gate.ts";
import {
  addPolicy,
  adminApi,
  type Api,
  auditRecordsOf,
  must,
  type ProxyProcess,
  proxyDirs,
  proxyEnv,
  type Scenario,
  setUpScenario,
  startEgressProxy,
  startProxy,
  waitFor,
} from "../../src/proxy/testing/integration.ts";

setDefaultTimeout(60_000);

/** Whole record lines in a spool's segments whose ids no acknowledgement file names. */
function unshippedOnDisk(spool: string): number {
  const names = readdirSync(spool);
  const acked = new Set(names.filter((n) => n.endsWith(".acked")).flatMap((n) => spoolLines(readFileSync(join(spool, n), "utf8"))));
  const ids = names.filter((n) => n.endsWith(".jsonl") && n.startsWith("seg-")).flatMap((n) => spoolLines(readFileSync(join(spool, n), "latin1")).map((l) => lineRecordId(Buffer.from(l, "latin1"))));
  return ids.filter((id) => id !== null && !acked.has(id)).length;
}
let cp: ControlPlaneProcess;
let api: Api;
let s: Scenario;
const running: ProxyProcess[] = [];

/** A replica of the scenario's installation against the real control plane (`extra` overrides). */
const replicaEnv = (dirs = proxyDirs(), extra: Record<string, string> = {}) => proxyEnv(cp.url, s.runtimeToken, extra, dirs);
function launch(env: Record<string, string>) {
  const p = startProxy(env);
  running.push(p);
  return p;
}

beforeAll(async () => {
  cp = await startControlPlane();
  api = adminApi(cp);
  s = await setUpScenario(api, "ops");
  await addPolicy(api, s, "*", "tool:crm.read");
});

afterAll(async () => {
  for (const p of running) if (p.proc.exitCode === null) await p.stop("SIGKILL");
  await cp?.stop();
});

describe("egress and polling", () => {
  test("control-plane calls go through SVC_PROXY_EGRESS_PROXY; unchanged bundles are 304", async () => {
    const egress = startEgressProxy();
    try {
      const px = launch(replicaEnv(undefined, { SVC_PROXY_EGRESS_PROXY: egress.url }));
      await px.waitReady();
      await waitFor(() => egress.seen.some((r) => r.url.includes("/api/v1/runtime/policy-bundle") && r.status === 304), "a 304 poll through the egress proxy");
      const paths = egress.seen.map((r) => new URL(r.url).pathname);
      expect(paths[0]).toBe("/api/v1/runtime/bootstrap");
      expect(paths).toContain("/api/v1/runtime/policy-bundle");
      const first = egress.seen.find((r) => r.url.includes("policy-bundle"))!;
      expect(first.status).toBe(200);
      expect(new URL(first.url).searchParams.get("version")).toBe("1");
      await waitFor(() => egress.seen.some((r) => r.url.endsWith("/api/v1/runtime/heartbeat") && r.status === 204), "a heartbeat through the egress proxy");
      await px.stop();
    } finally {
      void egress.stop();
    }
  });

  test("SVC_PROXY_NO_PROXY bypasses the egress proxy for the control-plane host", async () => {
    const egress = startEgressProxy();
    try {
      const px = launch(replicaEnv(undefined, { SVC_PROXY_EGRESS_PROXY: egress.url, SVC_PROXY_NO_PROXY: "metadata.internal,127.0.0.1" }));
      await px.waitReady();
      expect((await px.policy()).state).toBe("ready");
      expect(egress.seen).toEqual([]);
      await px.stop();
    } finally {
      void egress.stop();
    }
  });

  test("the replica reports itself by heartbeat", async () => {
    const px = launch(replicaEnv());
    await px.waitReady();
    const inst = async () => (await api("GET", `/installations/${s.installationId}`)).json;
    await waitFor(async () => (await inst()).replicas?.some((r: any) => r.state === "ready" && r.last_heartbeat_at), "a heartbeat recorded on the installation");
    await px.stop();
  });
});

describe("control plane outages", () => {
  test("down: stale, still deciding on the last good bundle; back: ready", async () => {
    const px = launch(replicaEnv());
    await px.waitReady();
    expect((await px.policy()).state).toBe("ready");
    await cp.stop();
    try {
      await waitFor(async () => (await px.policy()).state === "stale", "state stale");
      expect((await fetch("http://localhost/readyz", { unix: px.socket } as RequestInit)).status).toBe(200);
      expect((await px.decide("crm.read", s.users.alice!.remote)).decision).toBe("permit");
      expect((await px.policy()).spool_depth).toBeGreaterThanOrEqual(1);
    } finally {
      await cp.restart();
    }
    await waitFor(async () => (await px.policy()).state === "ready", "state ready again");
    await waitFor(async () => (await px.policy()).spool_depth === 0, "the spooled record shipped after recovery");
    await px.stop();
  });

  test("restart while the control plane is down: the persisted bundle is reloaded (stale) and decisions continue", async () => {
    const dirs = proxyDirs();
    const first = launch(replicaEnv(dirs));
    await first.waitReady();
    const before = await first.policy();
    const rev = before.policy_revision;
    expect(await first.stop()).toBe(0);
    await cp.stop();
    try {
      const second = launch(replicaEnv(dirs));
      await second.waitReady();
      const st = await second.policy();
      expect(st).toMatchObject({ state: "stale", policy_revision: rev, tool_count: 2 });
      // last_success: the bundle's last contact before the restart, not "never"
      expect(Date.parse(st.last_success)).toBeLessThanOrEqual(Date.parse(before.last_success));
      // `svc policy show` says that decisions run on the last good bundle
      const shown = Bun.spawnSync([...svcCommand(), "policy", "show"], {
        env: { ...process.env, SVC_RUNTIME_TOKEN: s.runtimeToken, SVC_RUNTIME_SOCKET_PATH: second.socket } as Record<string, string>,
        stdout: "pipe",
        stderr: "pipe",
      });
      expect(shown.exitCode).toBe(0);
      expect(shown.stdout.toString()).toMatch(/^state:\s+stale\nreason:\s+the control plane is unreachable or not answering; decisions continue on the last good bundle \(revision \d+\)$/m);
      expect(shown.stdout.toString()).toContain(`\nlast_success:    ${st.last_success}\n`);
      const d = await second.decide("crm.read", s.users.bob!.remote);
      expect(d.decision).toBe("permit");
      expect(await second.stop()).toBe(0); // SIGTERM with the control plane down: drains what it can, exits
      await cp.restart();
      // the record answered while the control plane was down ships on the next start, once
      const third = launch(replicaEnv(dirs));
      await third.waitReady();
      await waitFor(async () => (await api("GET", `/audit-records/${d.record_id}`)).status === 200, "the stale-mode record shipped");
      await third.stop();
    } finally {
      if (cp.proc.exitCode !== null) await cp.restart();
    }
  });

  test("an unreachable control plane at first start: 503 with the reason", async () => {
    const px = launch(replicaEnv(undefined, { SVC_RUNTIME_CONTROL_PLANE_URL: "http://127.0.0.1:9" }));
    await waitFor(async () => {
      const r = await fetch("http://localhost/readyz", { unix: px.socket } as RequestInit);
      const j = await r.json();
      return r.status === 503 && /bootstrap failed/.test(j.reason);
    }, "readyz 503 naming the bootstrap failure");
    await px.stop();
  });

  test("a control-plane URL ending in /api/v1 is refused at start, naming the variable", async () => {
    const px = launch(replicaEnv(undefined, { SVC_RUNTIME_CONTROL_PLANE_URL: `${cp.url}/api/v1` }));
    expect(await px.proc.exited).toBe(1);
    await Bun.sleep(0);
    expect(px.logs()).toContain("SVC_RUNTIME_CONTROL_PLANE_URL");
    expect(px.logs()).toContain("/api/v1");
  });
});

describe("one proxy per audit spool directory", () => {
  test("a second proxy on the same spool (its own socket and state) is refused in one line naming the directory and the holder pid; after kill -9 the spool is free", async () => {
    const a = proxyDirs();
    const b = proxyDirs();
    const first = launch(replicaEnv(a));
    await first.waitReady();
    const second = launch(replicaEnv({ ...b, spool: a.spool }));
    expect(await second.proc.exited).toBe(1);
    const line = `svc proxy serve: SVC_PROXY_AUDIT "${a.spool}" is in use by another proxy (pid ${first.proc.pid}, since `;
    await waitFor(() => second.logs().includes(line), "the refusal on stderr");
    expect(second.logs().trim().split("\n")).toHaveLength(1);
    expect((await first.decide("crm.read", s.users.alice!.remote)).decision).toBe("permit");

    // kill -9 leaves the lock behind; it does not block a restart on the same spool
    first.proc.kill("SIGKILL");
    await first.proc.exited;
    expect(existsSync(join(a.spool, "proxy.lock"))).toBe(true);
    const again = launch(replicaEnv({ ...b, spool: a.spool }));
    await again.waitReady();
    await waitFor(async () => (await again.policy()).spool_depth === 0, "the first proxy's records shipped by the second");
    expect(await again.stop()).toBe(0);
    expect(existsSync(join(a.spool, "proxy.lock"))).toBe(false); // released at exit
  });
});

describe("audit delivery", () => {
  test("SIGTERM drains the spool before exit", async () => {
    const px = launch(replicaEnv());
    await px.waitReady();
    const ids = await Promise.all(Array.from({ length: 50 }, async () => (await px.decide("crm.read", s.users.alice!.remote)).record_id as string));
    expect(await px.stop()).toBe(0);
    const all = new Set((await auditRecordsOf(api, s.installationId)).map((r) => r.id));
    for (const id of ids) expect(all.has(id)).toBe(true);
  });

  test("a second signal while draining (Ctrl-C reaching it directly and through the supervisor) does not cut the drain", async () => {
    const egress = startEgressProxy();
    const dirs = proxyDirs();
    try {
      const px = launch(replicaEnv(dirs, { SVC_PROXY_EGRESS_PROXY: egress.url }));
      await px.waitReady();
    } finally {
      void egress.stop(); // the control plane is now unreachable: the drain holds records it cannot ship
    }
    const px = running.at(-1)!;
    const ids = await Promise.all(Array.from({ length: 20 }, async () => (await px.decide("crm.read", s.users.alice!.remote)).record_id as string));
    expect(await px.stop("SIGINT", 2)).toBe(0); // not 130: the second SIGINT did not kill it mid-drain
    const again = launch(replicaEnv(dirs));
    await again.waitReady();
    await waitFor(async () => {
      const all = new Set((await auditRecordsOf(api, s.installationId)).map((r) => r.id));
      return ids.every((id) => all.has(id));
    }, "the records kept in the spool to arrive after the restart");
    await again.stop();
  });

  test("kill -9 under load: after a restart every answered record arrives exactly once", async () => {
    const dirs = proxyDirs();
    const px = launch(replicaEnv(dirs));
    await px.waitReady();
    const answered: string[] = [];
    let stop = false;
    const workers = Array.from({ length: 16 }, async () => {
      while (!stop) {
        try {
          const d = await px.decide("crm.read", s.users.alice!.remote, { n: answered.length });
          if (d.record_id) answered.push(d.record_id);
        } catch {
          return; // the proxy died mid-request: that call was never answered
        }
      }
    });
    await waitFor(() => answered.length >= 600, "600 answered decisions under load");
    px.proc.kill("SIGKILL");
    stop = true;
    await Promise.all(workers);
    await px.proc.exited;
    // What the restart finds unshipped: every whole record line not acknowledged (a torn last line is no record).
    const unshipped = unshippedOnDisk(dirs.spool);
    // The backlog is indexed after the proxy is ready (spool.ts loadInBackground). Held after
    // the killed run's segments (testing/spool-gate.ts), the proxy already decides and says
    // honestly what it has counted so far and that it is still counting.
    const gate = gateSpoolIndexing(dirs.spool);
    const restarted = launch(replicaEnv(dirs));
    await restarted.waitReady();
    await waitFor(async () => (await restarted.policy()).spool_depth === unshipped, "the killed run's unshipped records counted", 30000);
    expect(await restarted.policy()).toMatchObject({ spool_depth: unshipped, spool_indexing: true });
    await gate.release();
    await waitFor(async () => restarted.logs().includes('"event":"audit spool loaded"'), "the backlog to be indexed after restart", 30000);
    await waitFor(async () => (await restarted.policy()).spool_depth === 0, "the spool to empty after restart", 30000);
    expect((await restarted.policy()).spool_indexing).toBe(false);
    const records = await auditRecordsOf(api, s.installationId);
    const counts = new Map<string, number>();
    for (const r of records) counts.set(r.id, (counts.get(r.id) ?? 0) + 1);
    for (const id of answered) expect(counts.get(id)).toBe(1);
    expect([...counts.values()].every((n) => n === 1)).toBe(true);
    await restarted.stop();
  });
});

// Last in this file: it rotates the scenario's runtime token.
describe("the runtime credential is refused", () => {
  test("token rotated: the running proxy stops deciding (readyz 503); restarted with the old token it exits non-zero", async () => {
    const dirs = proxyDirs();
    const px = launch(replicaEnv(dirs));
    await px.waitReady();
    const before = await px.decide("crm.read", s.users.alice!.remote);
    expect(before.decision).toBe("permit");
    await waitFor(async () => (await api("GET", `/audit-records/${before.record_id}`)).status === 200, "the record shipped");
    await must(api("POST", `/installations/${s.installationId}/credential`, { rotate: true }), "rotate the runtime token");
    await waitFor(async () => {
      const r = await fetch("http://localhost/readyz", { unix: px.socket } as RequestInit);
      const j = await r.json();
      return r.status === 503 && j.state === "unavailable" && /401/.test(j.reason) && /rotated/.test(j.reason);
    }, "readyz 503 naming the refused token");
    const refused = await px.call("/v1/tools/decide", { body: { tool: "crm.read", user: { id: s.users.alice!.remote }, args: {} } });
    expect(refused.status).toBe(503);
    expect((await (await px.call("/v1/models", { user: s.users.alice!.remote })).json()).data).toEqual([]);
    expect(px.logs().match(/runtime credential refused/g)?.length).toBe(1);
    expect(existsSync(join(dirs.stateDir, "last-good-bundle.json"))).toBe(false);
    expect(existsSync(join(dirs.stateDir, "bootstrap.json"))).toBe(false);
    expect(await px.stop()).toBe(0);

    // the supervisor restarts it with the same old token: "runtime bootstrap failed"
    const again = launch(replicaEnv(dirs));
    expect(await again.proc.exited).not.toBe(0);
    await Bun.sleep(0);
    expect(again.logs()).toContain("401");
    expect(again.logs()).toContain("rotated");
  });
});
