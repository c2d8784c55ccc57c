// The approvers' minimum membership age (recovery-policy.ts): only an owner sets it; raising
// holds at once; lowering holds only for requests made once the age it replaces has passed, so
// an owner who lowers it to 0 cannot approve with a fresh sockpuppet any sooner. Pure cases,
// then through the real app on SQLite (and PostgreSQL with SVC_TEST_POSTGRES_URL).
import { describe, expect, test } from "bun:test";
import { accountWithRole } from "../auth/test-fixtures.ts";
import { DEFAULT_APPROVER_MIN_AGE_HOURS, minAgeHoursAt } from "./recovery-policy.ts";
import { HOUR, addMemberAs, freshToken, requestBySecond, world } from "./test-fixtures.ts";

test("minAgeHoursAt: the default; a raise at once; a lowering after the age it replaces (pure)", () => {
  expect(minAgeHoursAt(undefined, 0)).toBe(DEFAULT_APPROVER_MIN_AGE_HOURS);
  const raised = { approverMinAgeHours: 48, previousMinAgeHours: 24, changedAt: 10 * HOUR };
  expect(minAgeHoursAt(raised, 0)).toBe(48);
  expect(minAgeHoursAt(raised, 10 * HOUR)).toBe(48);
  const lowered = { approverMinAgeHours: 0, previousMinAgeHours: 24, changedAt: 10 * HOUR };
  expect(minAgeHoursAt(lowered, 10 * HOUR)).toBe(24);
  expect(minAgeHoursAt(lowered, 34 * HOUR - 1)).toBe(24);
  expect(minAgeHoursAt(lowered, 34 * HOUR)).toBe(0);
});

describe("the recovery approver rule", () => {
  test("owners alone set it; a lowering to 0 waits out the 24 hours it replaces; a raise holds at once; each change is an admin event and a notice", async () => {
    const w = await world();
    const { cp } = w;
    const admin = await accountWithRole(cp, "admin", "admin@example.com", cp.accountId);
    expect((await cp.call("GET", cp.org("/audit-recovery-policy"), { token: admin.token })).json).toMatchObject({
      approver_min_age_hours: 24,
      effective_min_age_hours: 24,
      lowering_effective_at: null,
      fresh_sign_in_minutes: 5,
      changed_by: null,
    });
    const byAdmin = await cp.call("PUT", cp.org("/audit-recovery-policy"), { token: admin.token, body: { approver_min_age_hours: 0 } });
    expect(byAdmin.status).toBe(403);
    expect(byAdmin.json.detail).toContain("only an owner");
    for (const bad of [-1, 8761, 1.5]) expect((await cp.call("PUT", cp.org("/audit-recovery-policy"), { token: w.second.token, body: { approver_min_age_hours: bad } })).status).toBe(422);

    // The requester-to-be lowers it to 0 and adds an approver of its liking through another owner.
    const t0 = cp.deps.now();
    const lowered = await cp.call("PUT", cp.org("/audit-recovery-policy"), { token: w.second.token, body: { approver_min_age_hours: 0 } });
    expect(lowered.status).toBe(200);
    expect(lowered.json).toMatchObject({ approver_min_age_hours: 0, effective_min_age_hours: 24, changed_by: { email: w.second.email } });
    expect(Date.parse(lowered.json.lowering_effective_at) - t0).toBeGreaterThanOrEqual(24 * HOUR);
    const fresh = await addMemberAs(cp, cp.adminToken, "fresh.admin@example.com", "admin");
    w.clock.advance(HOUR);
    const id1 = await requestBySecond(w);
    expect((await cp.call("POST", cp.org(`/audit-recovery-requests/${id1}/approve`), { token: await freshToken(cp, fresh) })).json.code).toBe("recovery_approver_too_new");
    // Once 24 hours have passed since the change, an approver added just now may approve.
    w.clock.advance(24 * HOUR);
    const newest = await addMemberAs(cp, cp.adminToken, "newest.admin@example.com", "admin");
    const id2 = await requestBySecond(w);
    expect((await cp.call("POST", cp.org(`/audit-recovery-requests/${id2}/approve`), { token: await freshToken(cp, newest) })).json.status).toBe("approved");
    expect((await cp.call("GET", cp.org("/audit-recovery-policy"))).json).toMatchObject({ effective_min_age_hours: 0, lowering_effective_at: null });

    // Raised to 48 hours: at once, for requests not yet approved as well.
    const id3 = await requestBySecond(w);
    expect((await cp.call("PUT", cp.org("/audit-recovery-policy"), { body: { approver_min_age_hours: 48 } })).json).toMatchObject({ approver_min_age_hours: 48, effective_min_age_hours: 48 });
    expect((await cp.call("POST", cp.org(`/audit-recovery-requests/${id3}/approve`), { token: await freshToken(cp, fresh) })).json.code).toBe("recovery_approver_too_new");

    const changes = ((await cp.call("GET", cp.org("/audit-records?kind=admin"))).json.records as Array<Record<string, any>>).filter((e) => e.action === "audit:recovery.policy");
    expect(changes.map((e) => [e.admin.actor.email, e.admin.before.effective_min_age_hours, e.admin.after.approver_min_age_hours, e.admin.severity])).toEqual([
      ["owner@example.com", 0, 48, "high"],
      [w.second.email, 24, 0, "high"],
    ]);
    const notices = (await cp.call("GET", cp.org("/notices"), { token: admin.token })).json.notices as Array<{ action: string; text: string }>;
    expect(notices.filter((n) => n.action === "audit:recovery.policy").map((n) => n.text)).toContain(
      `${w.second.email} set the minimum membership age of escrow recovery approvers from 24 to 0 hours; it holds for requests made from ${new Date(Date.parse(lowered.json.lowering_effective_at)).toISOString()} (the 24 hours in force until then must pass first)`,
    );
  });
});
