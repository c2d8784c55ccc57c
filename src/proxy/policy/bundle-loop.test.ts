// The bundle loop against a scripted control-plane client and a clock the test moves: what it
// persists as the last good bundle, and what a restart reports from it.
import { afterEach, describe, expect, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { BootstrapResponse } from "../../contract/runtime-api.ts";
import type { Logger } from "../../log/index.ts";
import { BundleLoop, CONFIRMATION_PERSIST_MS } from "./bundle-loop.ts";
import { type BundleAnswer, type ControlPlaneClient, ControlPlaneError } from "../link/control-plane-client.ts";
import { BUNDLE_FILE } from "./last-good.ts";
import { bundleTool, fakeBundle } from "../testing/bundle.ts";
import { ProxyStatus } from "./status.ts";
import { readSealed } from "../state-dir.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const bundle = fakeBundle({ revision: 7, tools: [bundleTool("a")] });
const boot: BootstrapResponse = {
  installation: { id: "inst_1", name: "x", platform: "chatui" },
  organization_id: "org_1",
  workspace_id: "ws_1",
  agent_id: "agt_1",
  digest_key: { id: "dk_1", key: "AAAA" },
  poll_interval_seconds: 60,
  heartbeat_interval_seconds: 60,
};
const quiet: Logger = { info() {}, warn() {}, error() {} };

/** A control plane that answers 200 the first time, 304 after, or is down. */
function scriptedClient() {
  const cp = { down: false, sent: false };
  const unreachable = () => new ControlPlaneError("control plane unreachable (test)", null);
  const client = {
    replicaId: null as string | null,
    async bootstrap() {
      if (cp.down) throw unreachable();
      return boot;
    },
    async fetchBundle(): Promise<BundleAnswer> {
      if (cp.down) throw unreachable();
      if (cp.sent) return { status: 304 };
      cp.sent = true;
      return { status: 200, bundle, etag: '"r7"', serverVersion: null };
    },
  };
  return { cp, client: client as unknown as ControlPlaneClient };
}

function loop(stateDir: string, client: ControlPlaneClient, clock: { now: Date }) {
  const status = new ProxyStatus();
  const l = new BundleLoop({
    client,
    status,
    log: quiet,
    stateDir,
    token: "tok",
    replicaId: "rep_1",
    credentialSyncRecipient: "age1x",
    version: "t",
    bundleVersion: 1,
    pollIntervalMs: 60_000,
    now: () => clock.now,
  });
  return { l, status };
}

const stored = (dir: string) => readSealed(dir, BUNDLE_FILE, "tok") as { fetched_at: string; confirmed_at: string };

describe("last_success across a restart", () => {
  test("a restart with the control plane down reports when the reloaded bundle was last confirmed, and says stale", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-loop-"));
    dirs.push(dir);
    const t0 = new Date("2026-05-01T10:00:00.000Z");
    const clock = { now: t0 };
    const { cp, client } = scriptedClient();
    const first = loop(dir, client, clock);
    await first.l.pollNow();
    first.l.stop();
    expect(stored(dir)).toMatchObject({ fetched_at: t0.toISOString(), confirmed_at: t0.toISOString() });

    // a 304 soon after is not worth a rewrite; one after CONFIRMATION_PERSIST_MS is recorded
    clock.now = new Date(t0.getTime() + 60_000);
    await first.l.pollNow();
    first.l.stop();
    expect(stored(dir).confirmed_at).toBe(t0.toISOString());
    const t1 = new Date(t0.getTime() + CONFIRMATION_PERSIST_MS + 60_000);
    clock.now = t1;
    await first.l.pollNow();
    first.l.stop();
    expect(first.status.lastSuccess).toEqual(t1);
    expect(stored(dir)).toMatchObject({ fetched_at: t0.toISOString(), confirmed_at: t1.toISOString() });

    // restart, control plane down
    cp.down = true;
    clock.now = new Date(t1.getTime() + 3_600_000);
    const second = loop(dir, client, clock);
    second.l.reloadPersisted();
    expect(second.status.report(0)).toMatchObject({ state: "starting", policy_revision: 7, last_success: t1.toISOString() });
    await second.l.pollNow();
    second.l.stop();
    const r = second.status.report(0);
    expect(r).toMatchObject({ state: "stale", policy_revision: 7, last_success: t1.toISOString() });
    expect(r.reason).toContain("decisions continue on the last good bundle");

    // the control plane answers: a success of this process
    cp.down = false;
    const t2 = new Date(clock.now.getTime() + 1000);
    clock.now = t2;
    await second.l.pollNow();
    second.l.stop();
    expect(second.status.report(0)).toMatchObject({ state: "ready", last_success: t2.toISOString(), reason: null });
  });
});

describe("a new bundle on a state disk that cannot take it", () => {
  test("the bundle is applied in memory although saving it fails; the next poll saves it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-loop-"));
    dirs.push(dir);
    const clock = { now: new Date("2026-05-01T10:00:00.000Z") };
    // revision 7 governs tool "a"; revision 8 no longer offers it (every call of it refused)
    let answer: BundleAnswer = { status: 200, bundle, etag: '"r7"', serverVersion: null };
    const client = {
      replicaId: null as string | null,
      bootstrap: async () => boot,
      fetchBundle: async () => answer,
    } as unknown as ControlPlaneClient;
    const { l, status } = loop(dir, client, clock);
    await l.pollNow();
    l.stop();
    expect(status.compiled?.revision).toBe(7);

    // the last good file cannot be replaced (a directory in its place: rename fails, even for root)
    rmSync(join(dir, BUNDLE_FILE));
    mkdirSync(join(dir, BUNDLE_FILE));
    answer = { status: 200, bundle: { ...bundle, revision: 8, tools: [] }, etag: '"r8"', serverVersion: null };
    await l.pollNow();
    l.stop();
    expect(status.compiled?.revision).toBe(8);
    expect(status.compiled?.tools.size).toBe(0);
    expect(status.state).toBe("ready");

    // space is back: the next poll (a 304) saves the bundle in use
    rmdirSync(join(dir, BUNDLE_FILE));
    answer = { status: 304 };
    await l.pollNow();
    l.stop();
    expect(readSealed(dir, BUNDLE_FILE, "tok")).toMatchObject({ etag: '"r8"', bundle: { revision: 8 } });
  });
});

describe("a bundle without what the proxy asked for (issue 29: a control plane too old for conditions)", () => {
  test("is refused: the last good bundle stays in use (stale), and with none the proxy decides nothing", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-loop-"));
    dirs.push(dir);
    const clock = { now: new Date("2026-05-01T10:00:00.000Z") };
    // revision 7 from a current control plane, with a conditional permit
    const conditional = fakeBundle({ revision: 7, tools: [bundleTool("a")], policies: [{ id: "pol_1", name: "small", src: "*", dst: "tool:a", effect: "permit", condition: "args.amount <= 500" }] });
    let answer: BundleAnswer = { status: 200, bundle: conditional, etag: 'W/"7-v1c-00ff00ff00ff00ff"', serverVersion: "0.2.0+abc" };
    const client = { replicaId: null as string | null, bootstrap: async () => boot, fetchBundle: async () => answer } as unknown as ControlPlaneClient;
    const { l, status } = loop(dir, client, clock);
    await l.pollNow();
    l.stop();
    expect(status.compiled?.revision).toBe(7);

    // revision 8 from an old replica: the permit without its condition, no features, no `c` in the ETag
    const { features: _, ...plain } = fakeBundle({ revision: 8, tools: [bundleTool("a")], policies: [{ id: "pol_1", name: "small", src: "*", dst: "tool:a", effect: "permit" }] });
    answer = { status: 200, bundle: plain, etag: 'W/"8-v1"', serverVersion: null };
    await l.pollNow();
    l.stop();
    expect(status.compiled?.revision).toBe(7);
    const r = status.report(0);
    expect(r.state).toBe("stale");
    expect(r.last_error).toContain("does not carry policy conditions");
    expect(r.last_error).toContain("a version before 0.2.0");
    expect(status.readiness().reason).toContain("does not carry policy conditions");

    // a release between conditions and 0.2.0: no features field, but its ETag says conditions
    answer = { status: 200, bundle: { ...plain, revision: 9, policies: conditional.policies }, etag: 'W/"9-v1c"', serverVersion: null };
    await l.pollNow();
    l.stop();
    expect(status.compiled?.revision).toBe(9);
    expect(status.report(0).state).toBe("ready");

    // a fresh proxy whose first bundle lacks conditions decides nothing
    const fresh = mkdtempSync(join(tmpdir(), "svc-loop-"));
    dirs.push(fresh);
    answer = { status: 200, bundle: plain, etag: 'W/"8-v1"', serverVersion: null };
    const second = loop(fresh, client, clock);
    await second.l.pollNow();
    second.l.stop();
    expect(second.status.compiled).toBeNull();
    expect(second.status.report(0).state).toBe("unavailable");
  });
});
