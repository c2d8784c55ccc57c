// Budget leases (POST /runtime/budget-leases): a share of what remains, per replica; settled
// with what was consumed; never more than the limit together, even asked at once; only the
// runtime's own budgets; what spend counts (leases against ingested spend, per replica).
import { describe, expect, test } from "bun:test";
import type { AuditRecord } from "../../contract/audit.ts";
import { linkRemoteIdentity, upsertUserByEmail } from "../directory/service.ts";
import { addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { LEASE_GRACE_MS, LEASE_TTL_MS, leaseCharge, leaseSize, ledgerSpent } from "./leases.ts";

const REP_A = "rep_01AAAAAAAAAAAAAAAAAAAAAAAA";
const REP_B = "rep_01BBBBBBBBBBBBBBBBBBBBBBBB";

async function setup(limit = 1000) {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const other = await addInstallation(cp);
  const alice = (await upsertUserByEmail(cp.deps.db, cp.orgId, { email: "alice@example.com", source: "manual" })).user;
  await linkRemoteIdentity(cp.deps.db, cp.orgId, { remoteUserId: "fe-alice", userId: alice.id, installationId: inst.installationId, now: Date.now() });
  const budget = (await cp.call("POST", cp.org("/budgets"), { body: { name: "alice daily", scope: "user", target: alice.id, period: "day", unit: "tokens", limit } })).json;
  type Use = { lease_id: string; consumed: number }[];
  const lease = async (body: { settle?: Use; report?: Use; want?: string[] }, replica = REP_A, token = inst.token) =>
    cp.call("POST", "/api/v1/runtime/budget-leases", {
      token,
      headers: { "x-svc-replica": replica },
      body: { settle: body.settle ?? [], ...(body.report ? { report: body.report } : {}), want: body.want ?? [budget.id] },
    });
  const spend = (tokens: number, replica: string): AuditRecord =>
    auditRecord(inst, {
      kind: "outcome",
      action: "model:invoke",
      tool_name: null,
      model: "m",
      reason: "outcome",
      outcome: "ok",
      replica_id: replica,
      subject: { user_id: alice.id, remote_user_id: "fe-alice", via_installation: false },
      prompt_tokens: tokens,
      completion_tokens: 0,
    });
  return { cp, inst, other, budget, lease, spend };
}

describe("budget leases", () => {
  test("pure: a lease's charge, the spend per replica, the lease size", () => {
    const now = 1_000_000;
    expect(leaseCharge({ granted: 100, consumed: 30, settled: false, expiresAt: now + 1 }, now)).toBe(100);
    expect(leaseCharge({ granted: 100, consumed: 130, settled: false, expiresAt: now + 1 }, now)).toBe(130); // calls in flight past it
    expect(leaseCharge({ granted: 100, consumed: 30, settled: true, expiresAt: now + 1 }, now)).toBe(30);
    expect(leaseCharge({ granted: 100, consumed: 30, settled: false, expiresAt: now - LEASE_GRACE_MS + 1 }, now)).toBe(100); // a stream outlives it
    expect(leaseCharge({ granted: 100, consumed: 30, settled: false, expiresAt: now - LEASE_GRACE_MS }, now)).toBe(30);
    const lease = (replicaId: string | null, granted: number, consumed = 0, settled = false) => ({ replicaId, granted, consumed, settled, expiresAt: now + 1 });
    // per replica the greater of leases and ingested records; replicas without leases by their records
    expect(
      ledgerSpent(
        [lease("a", 100), lease("a", 50, 50, true), lease("b", 40)],
        new Map([
          ["a", 120],
          ["b", 90],
          [null, 7],
          ["c", 5],
        ]),
        now,
      ),
    ).toBe(150 + 90 + 7 + 5);
    expect(leaseSize(1000, 0, "tokens")).toBe(200);
    expect(leaseSize(1000, 990, "tokens")).toBe(10); // the floor, 1 % of the limit
    expect(leaseSize(1000, 995, "tokens")).toBe(5); // never more than remains
    expect(leaseSize(1000, 1000, "tokens")).toBe(0);
    expect(leaseSize(1000, 1200, "tokens")).toBe(0);
    expect(leaseSize(10, 3, "money")).toBeCloseTo(1.4, 9);
    expect(leaseSize(1000, 990, "tokens", 150)).toBe(10); // what the waiting calls need, when that much remains
    expect(leaseSize(1000, 500, "tokens", 150)).toBe(150);
  });

  test("a share of what remains; settled with what was consumed; nothing when nothing remains", async () => {
    const { lease, budget } = await setup(1000);
    const first = await lease({});
    expect(first.status).toBe(200);
    expect(first.json.leases).toEqual([expect.objectContaining({ budget_id: budget.id, lease_id: expect.stringMatching(/^bls_/), granted: 200, spent: 0, limit: 1000 })]);
    expect(Date.parse(first.json.leases[0].expires_at) - Date.now()).toBeLessThanOrEqual(LEASE_TTL_MS);
    // another replica's lease: a share of what the first one left
    const second = (await lease({}, REP_B)).json.leases[0];
    expect(second).toMatchObject({ granted: 160, spent: 200 });
    // the first settles having consumed 50: 150 comes back
    const third = (await lease({ settle: [{ lease_id: first.json.leases[0].lease_id, consumed: 50 }] })).json.leases[0];
    expect(third).toMatchObject({ spent: 210, granted: 158 });
    // the second replica's calls in flight went past its lease: reported, counted at once, the lease still open
    const fourth = (await lease({ report: [{ lease_id: second.lease_id, consumed: 190 }] }, REP_B)).json.leases[0];
    expect(fourth.spent).toBe(210 + 158 + 30);
    // drain it: leases until nothing remains, then a refusal (lease_id null, granted 0)
    let last = fourth;
    for (let i = 0; i < 200 && last.granted > 0; i++) last = (await lease({})).json.leases[0];
    expect(last).toMatchObject({ lease_id: null, granted: 0, limit: 1000 });
    expect(last.spent).toBeGreaterThanOrEqual(1000);
  });

  test("leases asked at once never exceed the limit together", async () => {
    const { lease } = await setup(1000);
    const answers = await Promise.all(Array.from({ length: 40 }, async (_, i) => lease({}, i % 2 ? REP_A : REP_B)));
    const granted = answers.map((a) => a.json.leases[0].granted as number);
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(granted.reduce((x, y) => x + y, 0)).toBeLessThanOrEqual(1000);
    expect(granted.filter((g) => g > 0).length).toBeGreaterThan(10);
  });

  test("spend without a lease (ingested records) counts; a replica's records and its leases are one count, not two", async () => {
    const { cp, inst, lease, spend } = await setup(1000);
    await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: [spend(300, REP_B)] } });
    const a = (await lease({})).json.leases[0];
    expect(a).toMatchObject({ spent: 300, granted: 140 }); // 20 % of 700
    // REP_A's calls under that lease ship: 100 tokens recorded, within its lease of 140
    await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: [spend(100, REP_A)] } });
    expect((await lease({}, REP_B)).json.leases[0].spent).toBe(440); // 300 + max(140, 100)
  });

  test("only the runtime's own budgets: another installation's token gets no lease on them; a settle of another's lease does nothing", async () => {
    const { lease, other, budget } = await setup(1000);
    const mine = (await lease({})).json.leases[0];
    const theirs = await lease({ settle: [{ lease_id: mine.lease_id, consumed: 0 }] }, REP_B, other.token);
    expect(theirs.status).toBe(200);
    expect(theirs.json.leases).toEqual([]);
    // mine is still open: it counts its full grant
    expect((await lease({ want: [budget.id] })).json.leases[0].spent).toBe(200);
    expect((await lease({ want: ["bud_NOPE"] })).json.leases).toEqual([]);
    expect((await lease({ settle: [{ lease_id: "nope", consumed: 1 }] })).status).toBe(422);
  });
});
