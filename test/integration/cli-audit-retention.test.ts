// svc audit retention run|status against a real control plane (issue 30): a run goes on in the
// control plane's background, `run` returns at once, `status` shows it running and then what it
// deleted, `run --wait` follows a run to its end with short polls (it timed out after 30 s on a
// large store and told the user to run it again, which started a second run), and the store
// verifies afterwards with a pinned key.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { AuditChain } from "../../src/proxy/audit/chain.ts";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import { api, bootstrapRuntime, createAgent, createInstallation, org, runtimeRecord, svc, tempHomes } from "./cli-support.ts";

const DAY = 86_400_000;
const OLD = 4000;
let cp: ControlPlaneProcess;
const { home, removeHomes } = tempHomes();

beforeAll(async () => {
  cp = await startControlPlane();
  const runtime = await bootstrapRuntime(cp, (await createInstallation(cp, await createAgent(cp))).id);
  const chain = new AuditChain();
  // OLD records ten days old, then ten from today, in one chain
  for (let i = 0; i < OLD + 10; i += 1000) {
    const records = Array.from({ length: Math.min(1000, OLD + 10 - i) }, (_, j) =>
      chain.stamp(runtimeRecord(runtime, { ts: new Date(Date.now() - (i + j < OLD ? 10 * DAY : 0)).toISOString() }) as never),
    );
    const r = await api(cp, "POST", "/runtime/audit-records", { records }, runtime.token);
    if (r.status !== 200 || r.json.rejected.length > 0) throw new Error(`storing records failed: ${r.status} ${JSON.stringify(r.json).slice(0, 300)}`);
  }
});
afterAll(async () => {
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
  removeHomes();
});

test("run returns at once, status shows the run and then what it deleted, run --wait waits for its end", async () => {
  const h = home();
  const none = await svc(cp, ["audit", "retention", "status"], { home: h });
  expect(none.code).toBe(1);
  expect(none.stderr).toContain("no retention run yet");
  expect((await svc(cp, ["audit", "retention", "set", "5"], { home: h })).code).toBe(0);

  const started = await svc(cp, ["audit", "retention", "run", "--json"], { home: h });
  expect(started.code).toBe(0);
  const run = JSON.parse(started.stdout);
  expect(run).toMatchObject({ state: "running", retention_days: null, organization_id: cp.orgId });

  let status: any;
  for (let i = 0; i < 120; i++) {
    status = JSON.parse((await svc(cp, ["audit", "retention", "status", "--json"], { home: h })).stdout);
    if (status.state !== "running") break;
    await Bun.sleep(250);
  }
  expect(status).toMatchObject({ id: run.id, state: "done", deleted: OLD, chains_cut: 1, retention_days: 5 });
  const text = await svc(cp, ["audit", "retention", "status"], { home: h });
  expect(text.stdout).toContain(`Deleted ${OLD} audit records older than`);
  expect(text.stdout).toContain(`checkpoint #${status.checkpoint} signs where 1 chains now start`);

  // a second run, waited for: nothing more to delete
  const waited = await svc(cp, ["audit", "retention", "run", "--wait"], { home: h });
  expect(waited.code).toBe(0);
  expect(waited.stdout).toMatch(/^Deleted 0 audit records older than .* \(5 days\) \(run ret_/);
  expect(JSON.parse((await svc(cp, ["audit", "retention", "status", "--json"], { home: h })).stdout).id).not.toBe(run.id);

  // what remains verifies against the checkpoint the run signed
  const pin = (await api(cp, "GET", org(cp, "/audit-signing-key"))).json.public_key as string;
  const verified = await svc(cp, ["audit", "verify", "--public-key", pin, "--json"], { home: h });
  expect(verified.code).toBe(0);
  expect(JSON.parse(verified.stdout)).toMatchObject({ ok: true, problems_total: 0 });
}, 120_000);
