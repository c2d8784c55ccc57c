// The bundle loop follows a digest-key rotation (issue 27): a bundle naming another key id makes
// the proxy fetch the new key before it uses the bundle, drop the retired key at once, and
// persist the new one (sealed) for a restart; a failed fetch stops decisions until a retry.
import { afterEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { PolicyBundle } from "../../contract/bundle.ts";
import type { BootstrapResponse, DigestKeyMaterial } from "../../contract/runtime-api.ts";
import type { Logger } from "../../log/index.ts";
import { type BundleAnswer, type ControlPlaneClient, ControlPlaneError } from "../link/control-plane-client.ts";
import { loadBootstrap } from "../state-dir.ts";
import { fakeBundle } from "../testing/bundle.ts";
import { BundleLoop } from "./bundle-loop.ts";
import { ProxyStatus } from "./status.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const material = (id: string): DigestKeyMaterial => ({ id, key: Buffer.from(id.padEnd(32, "x")).toString("base64") });
const boot: BootstrapResponse = {
  installation: { id: "inst_1", name: "x", platform: "chatui" },
  organization_id: "org_1",
  workspace_id: "ws_1",
  agent_id: "agt_1",
  digest_key: material("dk_1"),
  poll_interval_seconds: 60,
  heartbeat_interval_seconds: 60,
};
const quiet: Logger = { info() {}, warn() {}, error() {} };

/** The control plane: its current key and bundle revision, and whether GET digest-key fails. */
function world() {
  const cp = { current: "dk_1", revision: 1, keyFails: false, keyFetches: 0, namesKey: true };
  const client = {
    replicaId: null as string | null,
    async bootstrap() {
      return { ...boot, digest_key: material(cp.current) };
    },
    async fetchBundle(_v: number, etag: string | null): Promise<BundleAnswer> {
      if (etag === `"r${cp.revision}"`) return { status: 304 };
      const bundle: PolicyBundle = fakeBundle({ revision: cp.revision, ...(cp.namesKey ? { digest_key_id: cp.current } : {}) });
      return { status: 200, bundle, etag: `"r${cp.revision}"`, serverVersion: null };
    },
    async digestKey() {
      cp.keyFetches++;
      if (cp.keyFails) throw new ControlPlaneError("GET /api/v1/runtime/digest-key answered 503", 503, null, "digest-key");
      return material(cp.current);
    },
  };
  const dir = mkdtempSync(join(tmpdir(), "svc-dk-"));
  dirs.push(dir);
  const status = new ProxyStatus();
  const loop = new BundleLoop({
    client: client as unknown as ControlPlaneClient,
    status,
    log: quiet,
    stateDir: dir,
    token: "tok",
    replicaId: "rep_1",
    credentialSyncRecipient: "age1x",
    version: "t",
    bundleVersion: 1,
    pollIntervalMs: 60_000,
  });
  return { cp, status, loop, dir };
}

test("a rotation reaches the proxy at its next poll: the new key is fetched before the bundle is used, and persisted", async () => {
  const { cp, status, loop, dir } = world();
  await loop.pollNow();
  loop.stop();
  expect(status.digestKey?.id).toBe("dk_1");
  expect(cp.keyFetches).toBe(0); // bootstrap brought the current key

  cp.current = "dk_2";
  cp.revision = 2;
  await loop.pollNow();
  loop.stop();
  expect(cp.keyFetches).toBe(1);
  expect(status.digestKey?.id).toBe("dk_2");
  expect(Buffer.from(status.digestKey!.key).toString()).toStartWith("dk_2");
  expect(status.compiled?.revision).toBe(2);
  expect(status.readiness().ready).toBe(true);
  expect(loadBootstrap(dir, "tok")?.digest_key.id).toBe("dk_2");

  // unchanged: no fetch
  await loop.pollNow();
  loop.stop();
  expect(cp.keyFetches).toBe(1);
});

test("when the new key cannot be fetched, the retired one is not used: no decisions until a retry gets it", async () => {
  const { cp, status, loop } = world();
  await loop.pollNow();
  loop.stop();
  cp.current = "dk_2";
  cp.revision = 2;
  cp.keyFails = true;
  await loop.pollNow();
  loop.stop();
  expect(status.digestKey).toBeNull();
  expect(status.serving()).toBe(false);
  const r = status.readiness();
  expect(r).toMatchObject({ ready: false, state: "unavailable" });
  expect(r.reason).toContain("digest key was rotated");
  expect(status.compiled?.revision).toBe(1); // the new bundle was not taken either

  cp.keyFails = false;
  await loop.pollNow();
  loop.stop();
  expect(status.digestKey?.id).toBe("dk_2");
  expect(status.compiled?.revision).toBe(2);
  expect(status.readiness().ready).toBe(true);
});

test("a bundle of a control plane that names no key id changes nothing", async () => {
  const { cp, status, loop } = world();
  cp.namesKey = false;
  await loop.pollNow();
  loop.stop();
  cp.current = "dk_2";
  cp.revision = 2;
  await loop.pollNow();
  loop.stop();
  expect(cp.keyFetches).toBe(0);
  expect(status.digestKey?.id).toBe("dk_1");
  expect(status.compiled?.revision).toBe(2);
});
