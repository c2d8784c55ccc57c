// The leases one replica holds (budget-leases.ts) against a scripted control plane that grants
// like the real one (a share of what remains, nothing when nothing remains): calls spend from
// a lease and settle on it; a used-up lease is renewed, once for every call waiting; a lease
// is settled only when no call spends from it any more; idle leases go back; a control plane
// that cannot be asked means "unavailable" (the caller falls back), never a refusal.
import { describe, expect, test } from "bun:test";
import type { BudgetLeaseRequest, BudgetLeaseResponse, BudgetState } from "../../contract/runtime-api.ts";
import { silentLogger } from "../../log/index.ts";
import { BudgetLeases, IDLE_MS } from "./budget-leases.ts";

const budget: BudgetState = {
  id: "bud_1",
  name: "alice daily",
  scope: "user",
  scope_id: "usr_alice",
  group_name: null,
  period: "day",
  unit: "tokens",
  limit: 1000,
  spent: 0,
  period_start: "2026-05-10T00:00:00.000Z",
  resets_at: "2026-05-11T00:00:00.000Z",
};

function scripted(o: { share?: number; fail?: () => boolean } = {}) {
  let clock = Date.parse("2026-05-10T12:00:00Z");
  const requests: BudgetLeaseRequest[] = [];
  const leases = new Map<string, { granted: number; consumed: number; settled: boolean }>();
  let n = 0;
  const spent = () => [...leases.values()].reduce((x, l) => x + (l.settled ? l.consumed : Math.max(l.granted, l.consumed)), 0);
  const holder = new BudgetLeases({
    log: silentLogger,
    now: () => clock,
    lease: async (req) => {
      requests.push(structuredClone(req));
      await Bun.sleep(5);
      if (o.fail?.()) throw new Error("control plane unreachable");
      for (const s of req.settle) Object.assign(leases.get(s.lease_id)!, { settled: true, consumed: s.consumed });
      for (const r of req.report ?? []) leases.get(r.lease_id)!.consumed = r.consumed;
      const out: BudgetLeaseResponse = { as_of: new Date(clock).toISOString(), leases: [] };
      for (const id of req.want) {
        const remaining = budget.limit - spent();
        const granted = remaining > 0 ? Math.min(remaining, Math.max(Math.ceil(remaining * (o.share ?? 0.2)), 10, req.need?.[id] ?? 0)) : 0;
        const lease_id = granted > 0 ? `bls_${String(++n).padStart(26, "0")}` : null;
        if (lease_id) leases.set(lease_id, { granted, consumed: 0, settled: false });
        out.leases.push({
          budget_id: id,
          lease_id,
          granted,
          spent: spent() - granted,
          limit: budget.limit,
          expires_at: new Date(clock + 60_000).toISOString(),
          period_start: budget.period_start,
          resets_at: budget.resets_at,
        });
      }
      return out;
    },
  });
  return { holder, requests, leases, spent, tick: (ms: number) => (clock += ms) };
}

describe("BudgetLeases", () => {
  test("calls one at a time spend exactly the limit: never a call past it", async () => {
    const t = scripted();
    let permitted = 0;
    for (;;) {
      const got = await t.holder.acquire([budget]);
      if (got.ok !== true) {
        expect(got).toMatchObject({ ok: false, refused: { id: "bud_1" }, answer: { granted: 0 } });
        break;
      }
      permitted++;
      t.holder.release(got.leases, () => 50);
    }
    expect(permitted).toBe(20); // 1000 tokens, 50 a call
    await t.holder.close();
    expect([...t.leases.values()].reduce((x, l) => x + l.consumed, 0)).toBe(1000);
    expect([...t.leases.values()].every((l) => l.settled)).toBe(true);
  });

  test("until a call has ended, a lease takes one call at a time: calls at once each get a lease of their own", async () => {
    const t = scripted();
    const got = await Promise.all(Array.from({ length: 4 }, async () => t.holder.acquire([budget])));
    const ids = got.map((g) => (g.ok === true ? g.leases[0]!.id : null));
    expect(new Set(ids).size).toBe(4);
    expect(ids.every(Boolean)).toBe(true);
  });

  test("calls at once: one request for all who wait; the overshoot is at most the calls in flight", async () => {
    const t = scripted();
    const inFlight = 8;
    let permitted = 0;
    let refused = 0;
    const worker = async () => {
      for (;;) {
        const got = await t.holder.acquire([budget]);
        if (got.ok !== true) {
          refused++;
          return;
        }
        permitted++;
        await Bun.sleep(1);
        t.holder.release(got.leases, () => 50);
      }
    };
    await Promise.all(Array.from({ length: inFlight }, worker));
    expect(refused).toBe(inFlight);
    expect(permitted * 50).toBeGreaterThanOrEqual(1000 - 50);
    expect(permitted * 50 - 1000).toBeLessThanOrEqual(inFlight * 50);
    // the leases were asked for what the waiting calls need: not one call's worth past the limit here
    expect(permitted * 50 - 1000).toBeLessThanOrEqual(50);
    // never two requests at once: each one's wanted list is the budget once
    expect(t.requests.every((r) => r.want.length <= 1)).toBe(true);
  });

  test("a lease is settled only when its last call ends, with what they consumed; idle leases go back", async () => {
    const t = scripted();
    // one call ended (10 tokens): the next ones share the lease by that estimate
    const first = await t.holder.acquire([budget]);
    if (first.ok !== true) throw new Error("no lease");
    t.holder.release(first.leases, () => 10);
    const a = await t.holder.acquire([budget]);
    const b = await t.holder.acquire([budget]);
    if (a.ok !== true || b.ok !== true) throw new Error("no lease");
    expect(b.leases[0]).toBe(a.leases[0]!);
    t.holder.start();
    t.tick(IDLE_MS + 1);
    await Bun.sleep(1100); // the tidy runs: the lease is retired, but calls spend from it
    expect(t.requests.flatMap((r) => r.settle)).toEqual([]);
    t.holder.release(a.leases, () => 30);
    t.holder.release(b.leases, () => 40);
    await t.holder.close();
    expect(t.requests.flatMap((r) => r.settle)).toEqual([{ lease_id: a.leases[0]!.id, consumed: 80 }]);
  });

  test("a control plane that cannot be asked: unavailable (the caller falls back), asked again after a pause", async () => {
    let down = true;
    const t = scripted({ fail: () => down });
    expect(await t.holder.acquire([budget])).toEqual({ ok: "unavailable" });
    expect(await t.holder.acquire([budget])).toEqual({ ok: "unavailable" });
    expect(t.requests).toHaveLength(1); // not asked again at once
    down = false;
    t.tick(3000);
    expect((await t.holder.acquire([budget])).ok).toBe(true);
  });
});
