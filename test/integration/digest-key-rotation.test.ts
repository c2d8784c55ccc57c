// Digest-key rotation across a real control plane and a real proxy (issue 27): `svc audit
// digest-key rotate` through the CLI; the proxy switches to the new key at its next bundle poll,
// without a restart; records before and after carry the old and the new key id, the same
// arguments get different digests under them, and each key's records still group
// (`svc audit list --args-digest … --digest-key …`).
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import { addPolicy, adminApi, type Api, type ProxyProcess, proxyEnv, type Scenario, setUpScenario, startProxy, waitFor } from "../../src/proxy/testing/integration.ts";
import { svc } from "./cli-support.ts";

setDefaultTimeout(60_000);
let cp: ControlPlaneProcess;
let api: Api;
let s: Scenario;
let px: ProxyProcess;

beforeAll(async () => {
  cp = await startControlPlane();
  api = adminApi(cp);
  s = await setUpScenario(api);
  await addPolicy(api, s, "*", "tool:crm.read");
  px = startProxy(proxyEnv(cp.url, s.runtimeToken, { SVC_PROXY_POLL_INTERVAL: "1s" }));
  await px.waitReady();
});

afterAll(async () => {
  await px?.stop();
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
});

const record = async (id: string) => {
  let r: any = null;
  await waitFor(async () => (r = await api("GET", `/audit-records/${id}`)).status === 200, `audit record ${id} at the control plane`);
  return r.json;
};
const cli = async (args: string[]) => {
  const r = await svc(cp, args);
  if (r.code !== 0) throw new Error(`svc ${args.join(" ")} exited ${r.code}: ${r.stderr}`);
  return r;
};
const sameArguments = async (digest: string, key: string) =>
  (JSON.parse((await cli(["audit", "list", "--args-digest", digest, "--digest-key", key, "--json"])).stdout).records as { id: string }[]).map((r) => r.id).sort();

test("a rotation reaches the running proxy within about a poll; old and new records carry their key ids; each key's records still group", async () => {
  const alice = s.users.alice!.remote;
  const args = { customer_id: "c-42" };
  const keys = JSON.parse((await cli(["audit", "digest-key", "list", "--json"])).stdout).keys as { id: string; status: string }[];
  expect(keys.map((k) => k.status)).toEqual(["current"]);
  const oldKey = keys[0]!.id;

  const before = [await px.decide("crm.read", alice, args), await px.decide("crm.read", alice, args)];
  const [b1, b2] = await Promise.all(before.map(async (d) => record(d.record_id)));
  expect([b1.digest_key_id, b2.digest_key_id]).toEqual([oldKey, oldKey]);
  expect(b1.args_digest).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
  expect(b2.args_digest).toBe(b1.args_digest);
  const revision = (await px.policy()).policy_revision as number;

  const rotated = await cli(["audit", "digest-key", "rotate"]);
  const newKey = /Rotated the audit digest key: (dk_\w+) is current, (dk_\w+) is retired\./.exec(rotated.stdout);
  expect(newKey?.[2]).toBe(oldKey);
  const current = newKey![1]!;
  expect(current).not.toBe(oldKey);

  // no restart: the proxy's next poll brings a bundle naming the new key, fetched before that
  // bundle is used, so once the proxy serves the new revision every record is made with it
  await waitFor(async () => ((await px.policy()).policy_revision as number) > revision, "the proxy to take the rotation's bundle", 10_000);
  expect(px.proc.exitCode).toBeNull();
  expect(px.logs()).toContain("digest key rotated");
  const after = [await px.decide("crm.read", alice, args), await px.decide("crm.read", alice, args)];
  const [a1, a2] = await Promise.all(after.map(async (d) => record(d.record_id)));
  expect([a1.digest_key_id, a2.digest_key_id]).toEqual([current, current]);
  expect(a2.args_digest).toBe(a1.args_digest);
  expect(a1.args_digest).not.toBe(b1.args_digest);

  // grouping works within a key: each key's records, and a digest under the other key finds nothing
  expect(await sameArguments(b1.args_digest, oldKey)).toEqual([b1.id, b2.id].sort());
  expect(await sameArguments(a1.args_digest, current)).toEqual([a1.id, a2.id].sort());
  expect(await sameArguments(b1.args_digest, current)).toEqual([]);

  // the CLI's list, and the admin event naming both ids (no material anywhere in it)
  const listed = JSON.parse((await cli(["audit", "digest-key", "list", "--json"])).stdout).keys as { id: string; status: string }[];
  expect(listed.map((k) => [k.id, k.status])).toEqual([
    [oldKey, "retired"],
    [current, "current"],
  ]);
  const events = JSON.parse((await cli(["audit", "list", "--kind", "admin", "--json"])).stdout).records.filter((r: { action: string }) => r.action === "digest_key.rotate");
  expect(events).toHaveLength(1);
  expect(events[0].admin).toMatchObject({ severity: "high", before: { current: oldKey }, after: { current } });
  const material = (await api("GET", "/api/v1/runtime/digest-key", undefined, s.runtimeToken)).json.key as string;
  expect(material).toBeString();
  expect(JSON.stringify(events[0])).not.toContain(material);
  expect(rotated.stdout + rotated.stderr).not.toContain(material);
});
