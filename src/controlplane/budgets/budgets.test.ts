// Budgets (issue 16): admin create/list/delete; the runtime gets the budgets of its agent, its
// linked users and their groups, with the period's spend across installations.
import { describe, expect, test } from "bun:test";
import type { AuditRecord } from "../../contract/audit.ts";
import { addGroupMember, ensureGroup, linkRemoteIdentity, upsertUserByEmail } from "../directory/service.ts";
import { addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { periodOf } from "./service.ts";

type Inst = Awaited<ReturnType<typeof addInstallation>>;
const spend = (inst: Inst, userId: string, p: number, c: number, cost: number, ts?: string): AuditRecord =>
  auditRecord(inst, {
    kind: "outcome",
    action: "model:invoke",
    tool_name: null,
    model: "m",
    reason: "outcome",
    outcome: "ok",
    subject: { user_id: userId, remote_user_id: "fe", via_installation: false },
    prompt_tokens: p,
    completion_tokens: c,
    cost,
    ...(ts ? { ts } : {}),
  });

describe("budgets", () => {
  test("periods are UTC days and months", () => {
    const at = Date.parse("2026-02-28T23:30:00Z");
    expect(periodOf("day", at)).toEqual({ start: Date.parse("2026-02-28T00:00:00Z"), end: Date.parse("2026-03-01T00:00:00Z") });
    expect(periodOf("month", at)).toEqual({ start: Date.parse("2026-02-01T00:00:00Z"), end: Date.parse("2026-03-01T00:00:00Z") });
  });

  test("create, list with spend across installations, runtime limits, delete", async () => {
    const cp = await testControlPlane();
    const db = cp.deps.db;
    const a = await addInstallation(cp);
    const b = await addInstallation(cp);
    const alice = (await upsertUserByEmail(db, cp.orgId, { email: "alice@example.com", source: "manual" })).user;
    const carol = (await upsertUserByEmail(db, cp.orgId, { email: "carol@example.com", source: "manual" })).user;
    const { group } = await ensureGroup(db, cp.orgId, "sales", "manual");
    await addGroupMember(db, cp.orgId, group.id, alice.id, "manual");
    await linkRemoteIdentity(db, cp.orgId, { remoteUserId: "fe-alice", userId: alice.id, installationId: a.installationId, now: Date.now() });
    const create = async (body: unknown) => cp.call("POST", cp.org("/budgets"), { body });
    expect((await create({ name: "alice daily", scope: "user", target: "alice@example.com", period: "day", unit: "tokens", limit: 100 })).status).toBe(201);
    expect((await create({ name: "sales monthly", scope: "group", target: "sales", period: "month", unit: "money", limit: 5 })).status).toBe(201);
    expect((await create({ name: "agent a", scope: "agent", target: a.agentId, period: "day", unit: "tokens", limit: 1000 })).status).toBe(201);
    expect((await create({ name: "carol", scope: "user", target: carol.id, period: "day", unit: "tokens", limit: 10 })).status).toBe(201);
    expect((await create({ name: "alice daily", scope: "user", target: alice.id, period: "day", unit: "tokens", limit: 1 })).status).toBe(409);
    expect((await create({ name: "x", scope: "user", target: "nobody@example.com", period: "day", unit: "tokens", limit: 1 })).status).toBe(404);
    expect((await create({ name: "y", scope: "user", target: alice.id, period: "day", unit: "tokens", limit: 0 })).status).toBe(422);
    // alice spends through installation a and b; yesterday's spend is outside the day
    const yesterday = new Date(periodOf("day", Date.now()).start - 3_600_000).toISOString();
    await cp.call("POST", "/api/v1/runtime/audit-records", { token: a.token, body: { records: [spend(a, alice.id, 30, 10, 1.5), spend(a, alice.id, 500, 500, 0, yesterday)] } });
    await cp.call("POST", "/api/v1/runtime/audit-records", { token: b.token, body: { records: [spend(b, alice.id, 20, 5, 0.25)] } });
    const list = (await cp.call("GET", cp.org("/budgets"))).json.budgets;
    const by = (n: string) => list.find((x: any) => x.name === n);
    expect(by("alice daily")).toMatchObject({ scope: "user", target: "alice@example.com", spent: 65, limit: 100, used: 0.65 });
    expect(by("sales monthly").spent).toBeCloseTo(1.75, 9); // money: yesterday's call cost nothing
    expect(by("agent a").spent).toBe(40);
    // the runtime of installation a: its agent's budget, alice's and her group's; not carol's (not linked there)
    const limits = await cp.call("GET", "/api/v1/runtime/limits", { token: a.token });
    expect(limits.status).toBe(200);
    expect(limits.json.budgets.map((x: any) => x.name).sort()).toEqual(["agent a", "alice daily", "sales monthly"]);
    expect(limits.json.budgets.find((x: any) => x.name === "sales monthly")).toMatchObject({ scope: "group", group_name: "sales", unit: "money" });
    // installation b links nobody and runs another agent: nothing to enforce
    expect((await cp.call("GET", "/api/v1/runtime/limits", { token: b.token })).json.budgets).toEqual([]);
    expect((await cp.call("DELETE", cp.org("/budgets/alice daily"))).status).toBe(200);
    expect((await cp.call("DELETE", cp.org("/budgets/alice daily"))).status).toBe(404);
    expect((await cp.call("GET", cp.org("/budgets"))).json.budgets).toHaveLength(3);
  });
});
