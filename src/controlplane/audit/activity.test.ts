// The overview's activity figures: per hour, top tools, top users; background tasks and
// outcomes left out; the window is bounded.
import { describe, expect, test } from "bun:test";
import { upsertUserByEmail } from "../directory/service.ts";
import { addInstallation, addOrganization, auditRecord } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { fillHours } from "./activity.ts";

const HOUR = 3_600_000;

describe("fillHours", () => {
  test("one bar per hour of the window, zero where nothing happened, denies apart from permits", () => {
    const since = 10 * HOUR + 5;
    const got = fillHours(
      [
        { h: 11, decision: "permit", n: 3 },
        { h: 11, decision: "deny", n: 1 },
        { h: 12, decision: "ask", n: 2 },
        { h: 99, decision: "permit", n: 7 },
      ],
      since,
      12 * HOUR + 1,
    );
    expect(got).toEqual([
      { hour: new Date(10 * HOUR).toISOString(), permit: 0, deny: 0 },
      { hour: new Date(11 * HOUR).toISOString(), permit: 3, deny: 1 },
      { hour: new Date(12 * HOUR).toISOString(), permit: 0, deny: 2 },
    ]);
  });
});

describe("GET /organizations/{org}/audit-activity", () => {
  test("counts decisions per hour and ranks tools and users; background tasks, outcomes and other organizations are left out", async () => {
    const cp = await testControlPlane();
    const a = await addInstallation(cp);
    const { user: ada } = await upsertUserByEmail(cp.deps.db, cp.orgId, { email: "ada@example.com", source: "manual" });
    const { user: bob } = await upsertUserByEmail(cp.deps.db, cp.orgId, { email: "bob@example.com", source: "manual" });
    const as = (u: { id: string }) => ({ subject: { user_id: u.id, remote_user_id: "fe", via_installation: false } });
    const records = [
      auditRecord(a, { ...as(ada) }),
      auditRecord(a, { ...as(ada) }),
      auditRecord(a, { ...as(ada), tool_name: "crm.update", action: "tool:crm.update", decision: "deny", reason: "svc.denied" }),
      auditRecord(a, { ...as(bob), tool_name: "crm.update", action: "tool:crm.update", decision: "deny", reason: "svc.denied" }),
      auditRecord(a, { ...as(bob), kind: "model", action: "model:invoke", tool_name: null, model: "m" }),
      auditRecord(a, { ...as(bob), kind: "model", action: "model:invoke", tool_name: null, model: "m", task: "title_generation" }),
      auditRecord(a, { ...as(bob), kind: "model", action: "model:invoke", tool_name: null, model: "m", task: "tags_generation" }),
    ];
    const ins = await cp.call("POST", "/api/v1/runtime/audit-records", { token: a.token, body: { records } });
    expect(ins.json.inserted).toBe(records.length);
    const other = await addOrganization(cp);
    const o = await addInstallation(cp, { orgId: other.orgId, workspaceId: other.workspaceId });
    expect((await cp.call("POST", "/api/v1/runtime/audit-records", { token: o.token, body: { records: [auditRecord(o, { ...as(ada) }), auditRecord(o, {})] } })).json.inserted).toBe(2);

    const res = await cp.call("GET", cp.org("/audit-activity"));
    expect(res.status).toBe(200);
    const act = res.json;
    expect(act.hours.length).toBeGreaterThanOrEqual(24);
    const sum = (k: "permit" | "deny") => act.hours.reduce((s: number, h: Record<string, number>) => s + h[k]!, 0);
    expect(sum("permit")).toBe(3); // two lookups, one model turn; the two titles are not counted
    expect(sum("deny")).toBe(2);
    expect(act.top_tools).toEqual([
      { tool: "crm.lookup", calls: 2, denied: 0 },
      { tool: "crm.update", calls: 2, denied: 2 },
    ]);
    expect(act.top_users).toEqual([
      { user_id: ada.id, email: "ada@example.com", calls: 3, denied: 1 },
      { user_id: bob.id, email: "bob@example.com", calls: 2, denied: 1 },
    ]);
    expect((await cp.call("GET", cp.org("/audit-activity?since=30d"))).status).toBe(422);
    expect((await cp.call("GET", cp.org("/audit-activity?since=yesterday"))).status).toBe(422);
  });
});
