// Usage (issue 16): outcome records of model calls carry tokens and cost; GET /usage sums them.
import { describe, expect, test } from "bun:test";
import type { AuditRecord } from "../../contract/audit.ts";
import { addGroupMember, ensureGroup, upsertUserByEmail } from "../directory/service.ts";
import { addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";

type Inst = Awaited<ReturnType<typeof addInstallation>>;
const modelCall = (inst: Inst, userId: string | null, model: string, p: number, c: number, cost?: number, ts?: string): AuditRecord =>
  auditRecord(inst, {
    kind: "outcome",
    action: "model:invoke",
    tool_name: null,
    model,
    reason: "outcome",
    outcome: "ok",
    subject: { user_id: userId, remote_user_id: "fe-x", via_installation: false },
    prompt_tokens: p,
    completion_tokens: c,
    ...(cost !== undefined ? { cost } : {}),
    duration_ms: 12,
    ...(ts ? { ts } : {}),
  });

describe("usage", () => {
  test("sums outcome records of model calls by user, group, model and agent; only in the window", async () => {
    const cp = await testControlPlane();
    const a = await addInstallation(cp);
    const b = await addInstallation(cp);
    const db = cp.deps.db;
    const alice = await upsertUserByEmail(db, cp.orgId, { email: "alice@example.com", source: "manual" });
    const bob = await upsertUserByEmail(db, cp.orgId, { email: "bob@example.com", source: "manual" });
    const { group } = await ensureGroup(db, cp.orgId, "sales", "manual");
    await addGroupMember(db, cp.orgId, group.id, alice.user.id, "manual");
    await addGroupMember(db, cp.orgId, group.id, bob.user.id, "manual");
    const old = new Date(Date.now() - 3 * 86_400_000).toISOString();
    const toA = [modelCall(a, alice.user.id, "m-small", 100, 50, 0.5), modelCall(a, alice.user.id, "m-large", 10, 5), modelCall(a, alice.user.id, "m-small", 1000, 1000, 9, old), auditRecord(a)];
    const toB = [modelCall(b, bob.user.id, "m-small", 7, 3, 0.25)];
    expect((await cp.call("POST", "/api/v1/runtime/audit-records", { token: a.token, body: { records: toA } })).json.inserted).toBe(4);
    expect((await cp.call("POST", "/api/v1/runtime/audit-records", { token: b.token, body: { records: toB } })).json.inserted).toBe(1);
    // the record view shows the counts
    expect((await cp.call("GET", cp.org(`/audit-records/${toA[0]!.id}`))).json).toMatchObject({ prompt_tokens: 100, completion_tokens: 50, cost: 0.5, duration_ms: 12 });

    const by = async (dim: string, since = "1d") => (await cp.call("GET", cp.org(`/usage?by=${dim}&since=${since}`))).json.rows;
    expect(await by("user")).toEqual([
      { key: alice.user.id, label: "alice@example.com", calls: 2, prompt_tokens: 110, completion_tokens: 55, total_tokens: 165, cost: 0.5 },
      { key: bob.user.id, label: "bob@example.com", calls: 1, prompt_tokens: 7, completion_tokens: 3, total_tokens: 10, cost: 0.25 },
    ]);
    expect(await by("group")).toEqual([{ key: group.id, label: "sales", calls: 3, prompt_tokens: 117, completion_tokens: 58, total_tokens: 175, cost: 0.75 }]);
    expect((await by("model")).map((r: { key: string; total_tokens: number }) => [r.key, r.total_tokens])).toEqual([
      ["m-small", 160],
      ["m-large", 15],
    ]);
    expect((await by("agent")).map((r: { key: string; calls: number }) => [r.key, r.calls])).toEqual([
      [a.agentId, 2],
      [b.agentId, 1],
    ]);
    // a wider window takes the older call too
    expect((await by("user", "7d"))[0]).toMatchObject({ key: alice.user.id, calls: 3, total_tokens: 2165, cost: 9.5 });
    const series = (await cp.call("GET", cp.org("/usage/series?by=model&bucket=day&since=7d"))).json.points;
    expect(series.reduce((n: number, p: { total_tokens: number }) => n + p.total_tokens, 0)).toBe(2175);
    expect(series[0].bucket).toMatch(/T00:00:00.000Z$/);
    const bad = await cp.call("GET", cp.org("/usage?by=user&since=last+week"));
    expect(bad.status).toBe(422);
  });
});
