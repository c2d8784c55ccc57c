// Adoption (issue 27, issue 29 item 4): rows stored before the store chains existed (here:
// records of a proxy that never chained, stored and then unlinked as the migration finds them)
// are reported as awaiting adoption, never as tampered; a checkpoint is signed for them even
// though no proxy chained anything; the background pass links them in bounded slices; once it
// is complete, a row with no link is an insertion. SQLite, and PostgreSQL with SVC_TEST_POSTGRES_URL.
import { describe, expect, test } from "bun:test";
import { eq, ne } from "drizzle-orm";
import type { ExportLine } from "../../contract/stored-line.ts";
import { verifyLines } from "../../contract/verify/index.ts";
import { checkpointOrganizations, makeCheckpoint } from "../audit-chain/checkpoints.ts";
import { tables } from "../db/index.ts";
import { addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";
import { adoptSlice, adoptionPass, adoptionState } from "./adoption.ts";

/** An organization as the migration leaves one that had rows (5 records and its bootstrap event): none linked, adoption pending. */
async function upgraded() {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  // a proxy from before chaining: no chain fields
  const records = Array.from({ length: 5 }, () => auditRecord(inst));
  expect((await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records } })).json.inserted).toBe(5);
  const { auditRecords: a, auditChainHeads: h, auditAdoption: t } = tables(cp.deps.db);
  await cp.deps.db.update(a).set({ storeChain: null, storeSeq: null, storePrev: null }).where(eq(a.orgId, cp.orgId));
  await cp.deps.db.delete(h).where(eq(h.orgId, cp.orgId));
  await cp.deps.db.insert(t).values({ orgId: cp.orgId, startedAt: cp.deps.now() });
  return { cp, inst, records };
}

async function verify(cp: TestControlPlane) {
  const lines = (await cp.call("GET", cp.org("/audit-records/export?order=chain"))).text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ExportLine);
  return verifyLines(lines, (await cp.call("GET", cp.org("/audit-checkpoints"))).json);
}

test("records of proxies that never chain still get a periodic checkpoint, and verify as such", async () => {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const records = Array.from({ length: 3 }, () => auditRecord(inst));
  await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records } });
  expect(await checkpointOrganizations(cp.deps.db)).toContain(cp.orgId);
  expect((await makeCheckpoint(cp.deps, cp.orgId)).created).toBe(true);
  // + the bootstrap event, in the admin chain
  expect(await verify(cp)).toMatchObject({ state: "verified", problems: [], covered: 4, unchained: 3 });
});

describe("adoption of rows stored before the store chains", () => {
  test("pending: reported as awaiting adoption, never tampered; a checkpoint is signed though nothing is chained", async () => {
    const { cp } = await upgraded();
    expect(await adoptionState(cp.deps.db, cp.orgId)).toBe("pending");
    expect(await checkpointOrganizations(cp.deps.db)).toContain(cp.orgId);
    await makeCheckpoint(cp.deps, cp.orgId, { force: true });
    expect(await verify(cp)).toMatchObject({ state: "unsigned", problems: [], awaiting_adoption: 5, unchained: 5 }); // the bootstrap event is in the control plane's own chain
  });

  test("bounded slices link every row; complete after the quiet period; then a row without a link is an insertion", async () => {
    const { cp, inst } = await upgraded();
    expect(await adoptSlice(cp.deps, cp.orgId, 2)).toBe(2);
    // the pass goes on slice by slice, but the quiet period is not over: still pending
    expect(await adoptionPass(cp.deps, cp.orgId, { slice: 2, quietMs: 3_600_000 })).toBe(4);
    expect(await adoptionState(cp.deps.db, cp.orgId)).toBe("pending");
    const chains = (await cp.deps.db.select().from(tables(cp.deps.db).auditRecords)).map((r) => [r.storeChain, r.storeSeq]);
    expect(chains.sort((x, y) => (x[1] as number) - (y[1] as number))).toEqual([1, 2, 3, 4, 5, 6].map((s) => ["adopted", s]));
    // a checkpoint now covers them
    expect((await makeCheckpoint(cp.deps, cp.orgId)).created).toBe(true);
    expect(await verify(cp)).toMatchObject({ state: "verified", covered: 6, awaiting_adoption: 0 });

    expect(await adoptionPass(cp.deps, cp.orgId, { quietMs: 0 })).toBe(0);
    expect(await adoptionState(cp.deps.db, cp.orgId)).toBe("complete");
    await makeCheckpoint(cp.deps, cp.orgId);
    const body = JSON.parse((await cp.call("GET", cp.org("/audit-checkpoints"))).json.checkpoints.at(-1).body);
    expect(body.adoption).toBe("complete");
    // a record of an installation that never chained, written straight into the store
    const a = tables(cp.deps.db).auditRecords;
    const [row] = await cp.deps.db.select().from(a).where(ne(a.kind, "admin")).limit(1);
    await cp.deps.db.insert(a).values({ ...row!, id: auditRecord(inst).id, storeChain: null, storeSeq: null, storePrev: null });
    const r = await verify(cp);
    expect(r.state).toBe("tampered");
    expect(r.problems.map((p) => p.kind)).toEqual(["inserted"]);
    // and adoption, complete, never takes it
    expect(await adoptionPass(cp.deps, cp.orgId, { quietMs: 0 })).toBe(0);
  });
});
