// Upgrades, downgrades and version skew (issue 29), with earlier releases built from this
// repository's history (test/support/releases.ts): 0.1.30 (PREVIOUS_RELEASE, with conditions)
// and a release from before conditions (BEFORE_CONDITIONS). On SQLite, and on PostgreSQL with
// SVC_TEST_POSTGRES_URL, where a rolling two-replica upgrade runs under load behind a
// round-robin balancer. Throughout, a conditional permit (`args.amount <= 500`) must never be
// taken for a plain one: a credit of 1000 is never permitted, by any proxy, at any point.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL, type Subprocess } from "bun";
import { TEST_POSTGRES_URL } from "../../src/controlplane/db/test-store.ts";
import { type ProxyProcess, type Scenario, auditRecordsOf, must, proxyEnv, setUpScenario, startProxy } from "../../src/proxy/testing/integration.ts";
import { collectOutput, freePort, svcCommand, waitFor } from "../support/controlplane-process.ts";
import { BEFORE_CONDITIONS, PREVIOUS_RELEASE, releaseBinary } from "../support/releases.ts";

setDefaultTimeout(600_000);

const NEW = svcCommand();
let OLD: string[];
let ANCIENT: string[];

/** An empty store for the first (old) release to migrate: a SQLite file, or a new PostgreSQL database. */
async function emptyStore(dataDir: string): Promise<string> {
  if (!TEST_POSTGRES_URL) return join(dataDir, "controlplane.db");
  const name = `svc_upgrade_${Math.random().toString(36).slice(2, 10)}`;
  const admin = new SQL({ url: TEST_POSTGRES_URL, max: 1 });
  await admin.unsafe(`CREATE DATABASE "${name}"`);
  await admin.close();
  const u = new URL(TEST_POSTGRES_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

/** One control-plane replica: a port and a data dir of its own, the shared store, any release. */
function replica(database: string, masterKey: string) {
  const dataDir = mkdtempSync(join(tmpdir(), "svc-upg-"));
  const tokenFile = join(dataDir, "token");
  const port = freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = {
    ...process.env,
    SVC_CP_DATA_DIR: dataDir,
    SVC_CP_LISTEN: `127.0.0.1:${port}`,
    SVC_CP_PUBLIC_URL: url,
    SVC_CP_ALLOW_PRIVATE_OUTBOUND: "1",
    SVC_CP_DATABASE: database,
    SVC_CP_MASTER_KEY: masterKey,
  } as Record<string, string>;
  let proc: Subprocess | null = null;
  let out = { text: () => "" };
  return {
    url,
    env,
    tokenFile,
    logs: () => out.text(),
    async start(cmd: string[]) {
      proc = Bun.spawn([...cmd, "controlplane", "serve"], { env, stdout: "pipe", stderr: "pipe" });
      out = collectOutput(proc);
      await waitFor(
        async () => {
          if (proc!.exitCode !== null) throw new Error(`control plane exited ${proc!.exitCode}: ${out.text()}`);
          return (await fetch(`${url}/readyz`)).ok;
        },
        `control plane at ${url}`,
        120_000,
      );
    },
    async stop() {
      proc?.kill("SIGTERM");
      await proc?.exited;
      proc = null;
    },
  };
}
type Replica = ReturnType<typeof replica>;

/** A balancer that sends each request to the next replica in turn (skipping one that is down). */
function roundRobin(targets: () => string[]) {
  let next = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
      const path = new URL(req.url).pathname + new URL(req.url).search;
      const all = targets();
      for (let i = 0; i < all.length; i++) {
        const target = all[next++ % all.length]!;
        try {
          const up = await fetch(target + path, { method: req.method, headers: req.headers, body, redirect: "manual" });
          return new Response(up.status === 304 || up.status === 204 ? null : await up.arrayBuffer(), { status: up.status, headers: up.headers });
        } catch {}
      }
      return new Response("no replica", { status: 503 });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, stop: async () => server.stop(true) };
}

const api = (base: string, token: string) => async (method: string, path: string, body?: unknown, tok?: string) => {
  const url = path.startsWith("/api/") ? `${base}${path}` : `${base}/api/v1/organizations/${orgId}${path}`;
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${tok ?? token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  let json: any = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, json, text };
};

let orgId = "";

/** Every decision a proxy made, and whether any permitted the credit of 1000. */
type Ledger = { ids: string[]; widened: string[] };

async function credit(px: ProxyProcess, user: string, amount: number, ledger: Ledger): Promise<string> {
  const d = await px.decide("crm.credit", user, { amount });
  if (!d.record_id) throw new Error(`no decision: ${JSON.stringify(d)}`);
  ledger.ids.push(d.record_id);
  if (amount > 500 && d.decision === "permit") ledger.widened.push(`${d.record_id} by ${px.env.SVC_PROXY_STATE_DIR}`);
  return d.decision;
}

function startProxyOf(cmd: string[], token: string, url: string): ProxyProcess {
  return startProxy(proxyEnv(url, token), cmd);
}

/** The scenario both upgrades run: a write tool crm.credit beside the scenario's, permitted up to 500 by a condition (what the earlier release must not widen). */
async function setUpCreditScenario(call: ReturnType<typeof api>, name: string): Promise<Scenario> {
  const s = await setUpScenario(call as never, name);
  const tools = [
    { name: "crm.read", access: "read", required_capabilities: [] },
    { name: "crm.update", access: "write", required_capabilities: [] },
    { name: "crm.credit", access: "write", required_capabilities: [] },
  ];
  await must(call("PUT", "/api/v1/runtime/tools", { tools }, s.runtimeToken), "tool sync");
  await must(
    call("POST", "/policies", { name: "small credits", src: "*", dst: "tool:crm.credit", effect: "permit", condition: "args.amount <= 500", workspace: s.workspace, agent_id: s.agentId }),
    "conditional permit",
  );
  return s;
}

/** Waits until every decision is stored, then checks none is missing or stored twice. */
async function expectAllStoredOnce(call: ReturnType<typeof api>, installationId: string, ledger: Ledger): Promise<void> {
  let records: any[] = [];
  await waitFor(
    async () => {
      records = (await auditRecordsOf(call as never, installationId)).filter((r) => r.kind === "tool");
      return ledger.ids.every((id) => records.some((r) => r.id === id));
    },
    "every decision to be stored",
    60_000,
  );
  const ids = records.map((r) => r.id);
  expect(new Set(ids).size).toBe(ids.length);
  expect(ids.length).toBe(ledger.ids.length);
}

/** `svc audit verify` of this build against the control plane at `url`, after a checkpoint. */
async function verify(url: string, token: string): Promise<{ code: number; text: string }> {
  const home = mkdtempSync(join(tmpdir(), "svc-upg-home-"));
  const env = { ...process.env, HOME: home, SVC_CONTROL_PLANE_URL: url, SVC_TOKEN: token };
  await fetch(`${url}/api/v1/organizations/${orgId}/audit-checkpoints`, { method: "POST", headers: { authorization: `Bearer ${token}` } });
  // Not spawnSync: the balancer in front of the replicas runs in this process.
  // verify trusts only a pinned key: pin the one the control plane names (the store was made by an older release, whose bootstrap printed none).
  const pin = Bun.spawn([...NEW, "audit", "signing-key", "pin"], { env, stdout: "pipe", stderr: "pipe" });
  await pin.exited;
  const proc = Bun.spawn([...NEW, "audit", "verify"], { env, stdout: "pipe", stderr: "pipe" });
  const out = collectOutput(proc);
  const code = await proc.exited;
  await out.closed;
  return { code, text: out.text() };
}

beforeAll(() => {
  OLD = [releaseBinary(PREVIOUS_RELEASE)];
  ANCIENT = [releaseBinary(BEFORE_CONDITIONS)];
});

describe(`upgrading svc (${TEST_POSTGRES_URL ? "postgres" : "sqlite"})`, () => {
  const proxies: ProxyProcess[] = [];
  const replicas: Replica[] = [];
  afterAll(async () => {
    for (const p of proxies) await p.stop().catch(() => undefined);
    for (const r of replicas) await r.stop().catch(() => undefined);
  });

  test("in place from 0.1.30, an old proxy on the new control plane, a new one beside it; an in-place downgrade to a release before conditions widens nothing for the new proxy; a store from a newer release is refused", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-upg-store-"));
    const database = await emptyStore(dataDir);
    const masterKey = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64");
    const cp = replica(database, masterKey);
    replicas.push(cp);
    const tokenFile = cp.tokenFile;
    const boot = Bun.spawnSync([...OLD, "controlplane", "bootstrap-admin", "--email", "owner@example.com", "--org-name", "Acme", "--token-out", tokenFile], {
      env: cp.env,
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(boot.exitCode).toBe(0);
    orgId = /organization (org_[0-9A-Z]+)/.exec(boot.stdout.toString())![1]!;
    const token = readFileSync(tokenFile, "utf8").trim();
    await cp.start(OLD);
    const call = api(cp.url, token);
    const s = await setUpCreditScenario(call, "upg");
    await must(call("POST", "/policies", { name: "watch credits", src: "*", dst: "tool:crm.credit", effect: "deny", mode: "shadow", workspace: s.workspace, agent_id: s.agentId }), "shadow deny");
    const alice = s.users.alice!.remote;
    const ledger: Ledger = { ids: [], widened: [] };

    // 0.1.30 everywhere
    const oldProxy = startProxyOf(OLD, s.runtimeToken, cp.url);
    proxies.push(oldProxy);
    await oldProxy.waitReady();
    expect(await credit(oldProxy, alice, 100, ledger)).toBe("permit");
    expect(await credit(oldProxy, alice, 1000, ledger)).toBe("deny");

    // the control plane upgraded in place; the old proxy keeps deciding and shipping into it
    await cp.stop();
    await cp.start(NEW);
    const version = await fetch(`${cp.url}/healthz`);
    expect(version.headers.get("svc-version")).toMatch(/^0\.2\.\d+\+/);
    expect(await credit(oldProxy, alice, 100, ledger)).toBe("permit");
    expect(await credit(oldProxy, alice, 1000, ledger)).toBe("deny");
    // a new proxy replica of the same installation beside it
    const newProxy = startProxyOf(NEW, s.runtimeToken, cp.url);
    proxies.push(newProxy);
    await newProxy.waitReady();
    for (const px of [oldProxy, newProxy]) {
      expect(await credit(px, alice, 100, ledger)).toBe("permit");
      expect(await credit(px, alice, 1000, ledger)).toBe("deny");
    }
    await expectAllStoredOnce(call, s.installationId, ledger);
    const clean = await verify(cp.url, token);
    expect(clean.text).not.toContain("tampered");
    expect(clean.code).toBe(0);
    // the skew is visible: two runtime releases
    const skew = await must(call("GET", "/versions"), "versions");
    expect(skew.skew).toBe(true);
    expect(skew.releases).toContain("0.1.30");

    // Downgraded in place, wrongly, to a release from before conditions (it cannot refuse: it
    // predates the refusal). It serves the conditional permit as a plain one; the new proxy
    // refuses that bundle and keeps deciding on its last good one.
    await oldProxy.stop();
    await cp.stop();
    await cp.start(ANCIENT);
    await waitFor(async () => ((await newProxy.policy()).last_error ?? "").includes("does not carry policy conditions"), "the new proxy to refuse the old bundle", 30_000);
    for (let i = 0; i < 5; i++) {
      expect(await credit(newProxy, alice, 1000, ledger)).toBe("deny");
      expect(await credit(newProxy, alice, 100, ledger)).toBe("permit");
    }
    expect(ledger.widened).toEqual([]);
    // This release's CLI against that control plane: a conditional policy is refused before anything is written.
    const home = mkdtempSync(join(tmpdir(), "svc-upg-home-"));
    const cliEnv = { ...process.env, HOME: home, SVC_CONTROL_PLANE_URL: cp.url, SVC_TOKEN: token };
    const before = (await must(call("GET", `/policies?workspace=${s.workspace}`), "policies")).policies.length;
    const cli = Bun.spawnSync(
      [
        ...NEW,
        "policies",
        "create",
        "--name",
        "big credits",
        "--src-pattern",
        "*",
        "--dst-pattern",
        "tool:crm.credit",
        "--effect",
        "permit",
        "--condition",
        "args.amount <= 5000",
        "--agent-id",
        s.agentId,
        "--workspace",
        s.workspace,
      ],
      { env: cliEnv, stdout: "pipe", stderr: "pipe" },
    );
    expect(cli.exitCode).not.toBe(0);
    expect(cli.stderr.toString()).toContain("does not support --condition; upgrade it first");
    expect((await must(call("GET", `/policies?workspace=${s.workspace}`), "policies")).policies.length).toBe(before);
    await cp.stop();

    // A store a newer release migrated: this release refuses to start on it, naming both.
    if (TEST_POSTGRES_URL) {
      const sql = new SQL({ url: database, max: 1 });
      await sql`INSERT INTO drizzle.__drizzle_migrations (hash, created_at) VALUES ('future', 4102444800000)`;
      await sql.close();
    } else {
      const db = new Database(database);
      db.run("INSERT INTO __drizzle_migrations (hash, created_at) VALUES ('future', 4102444800000)");
      db.close();
    }
    const refused = Bun.spawnSync([...NEW, "controlplane", "migrate"], { env: cp.env, stdout: "pipe", stderr: "pipe" });
    expect(refused.exitCode).toBe(3);
    expect(refused.stderr.toString()).toContain("does not know");
    expect(refused.stderr.toString()).toContain("restore the backup taken before the upgrade");
  });

  test.if(!!TEST_POSTGRES_URL)("a rolling upgrade of two control-plane replicas on PostgreSQL under load: no decision wider than the policy, none lost or stored twice", async () => {
    const database = await emptyStore(mkdtempSync(join(tmpdir(), "svc-upg-store-")));
    const masterKey = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64");
    const a = replica(database, masterKey);
    const b = replica(database, masterKey);
    replicas.push(a, b);
    const up = new Set<Replica>();
    const front = roundRobin(() => [...up].map((r) => r.url));
    const tokenFile = a.tokenFile;
    expect(Bun.spawnSync([...OLD, "controlplane", "bootstrap-admin", "--email", "owner@example.com", "--org-name", "Acme", "--token-out", tokenFile], { env: a.env }).exitCode).toBe(0);
    const token = readFileSync(tokenFile, "utf8").trim();
    await a.start(OLD);
    await b.start(OLD);
    up.add(a).add(b);
    const me = await (await fetch(`${front.url}/api/v1/me`, { headers: { authorization: `Bearer ${token}` } })).json();
    orgId = (me as { organization: { id: string } }).organization.id;
    const call = api(front.url, token);
    const s = await setUpCreditScenario(call, "roll");
    const ledger: Ledger = { ids: [], widened: [] };
    const pxOld = startProxyOf(OLD, s.runtimeToken, front.url);
    const pxNew = startProxyOf(NEW, s.runtimeToken, front.url);
    proxies.push(pxOld, pxNew);
    await pxOld.waitReady();
    await pxNew.waitReady();
    const alice = s.users.alice!.remote;
    let loading = true;
    const load = (async () => {
      while (loading) {
        for (const px of [pxOld, pxNew]) {
          await credit(px, alice, 1000, ledger);
          await credit(px, alice, 100, ledger);
        }
        await Bun.sleep(20);
      }
    })();
    const upgrade = async (r: Replica) => {
      up.delete(r);
      await r.stop();
      await r.start(NEW);
      up.add(r);
      await Bun.sleep(2000);
    };
    await Bun.sleep(1000);
    await upgrade(a); // mixed window: a new, b old
    await upgrade(b);
    loading = false;
    await load;
    expect(ledger.widened).toEqual([]);
    expect(ledger.ids.length).toBeGreaterThan(40);
    await expectAllStoredOnce(call, s.installationId, ledger);
    // The old replica stored its records outside the per-hour roll-ups (it does not know them):
    // they were marked pending and the new replicas folded them in, so the console's activity
    // counts every decision once (audit/rollup-fold.ts; budgets and usage count them at once).
    let counted: unknown = null;
    await waitFor(
      async () => {
        counted = (await must(call("GET", "/audit-activity?since=24h"), "activity")).top_tools.find((t: { tool: string }) => t.tool === "crm.credit")?.calls;
        return counted === ledger.ids.length;
      },
      "every decision in the roll-ups",
      90_000,
    ).catch(() => expect({ counted }).toEqual({ counted: ledger.ids.length }));
    expect(a.logs() + b.logs()).toContain("audit records of an older control-plane replica counted in the roll-ups");
    const clean = await verify(front.url, token);
    expect(clean.text).not.toContain("tampered");
    expect(clean.code).toBe(0);
    await front.stop();
  });
});
