// The console's usage page: charts per user and per model, totals, and each budget's status.
import { describe, expect, test } from "bun:test";
import { signInSession } from "../../auth/test-fixtures.ts";
import { upsertUserByEmail } from "../../directory/service.ts";
import { addInstallation, auditRecord } from "../../runtime/fixtures.ts";
import { testControlPlane } from "../../testing.ts";
import { usageChart } from "./usage.ts";

describe("usage page", () => {
  test("a chart stacks tokens per day, the largest keys in colour, the rest as other", () => {
    const now = Date.parse("2026-05-14T12:00:00Z");
    const pts = [
      { bucket: "2026-05-14T00:00:00.000Z", key: "a", total_tokens: 100, cost: 0 },
      { bucket: "2026-05-13T00:00:00.000Z", key: "b", total_tokens: 50, cost: 0 },
      ...["c", "d", "e", "f", "g", "h"].map((k) => ({ bucket: "2026-05-14T00:00:00.000Z", key: k, total_tokens: 1, cost: 0 })),
    ];
    const svg = String(usageChart("Per model", pts, (k) => `model ${k}`, now));
    expect(svg).toContain("<title>2026-05-14 model a: 100 tokens</title>");
    expect(svg).toContain("<title>2026-05-13 model b: 50 tokens</title>");
    expect(svg).toContain("other (2)"); // 8 keys: six coloured, two as other
    expect(svg).toContain("2026-05-01"); // 14 days ending today
    expect(svg).toContain("peak 106"); // 100 + six 1s on the 14th
    // colours by class, never inline styles (the console's CSP blocks them): bars and legend agree
    expect(svg).not.toContain("style=");
    expect(svg).toContain('<span class="swatch series-0" aria-hidden="true"></span> model a (100)');
    expect(svg).toContain('<span class="swatch series-6" aria-hidden="true"></span> other (2)');
    expect(svg).toMatch(/<rect class="series-0" [^>]*><title>2026-05-14 model a: 100 tokens<\/title>/);
  });

  test("the page shows budgets with their status and usage per user and model", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const alice = (await upsertUserByEmail(cp.deps.db, cp.orgId, { email: "alice@example.com", source: "manual" })).user;
    const call = auditRecord(inst, {
      kind: "outcome",
      action: "model:invoke",
      tool_name: null,
      model: "gpt-x",
      reason: "outcome",
      outcome: "ok",
      subject: { user_id: alice.id, remote_user_id: "fe", via_installation: false },
      prompt_tokens: 70,
      completion_tokens: 15,
      cost: 0.01,
    });
    await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: [call] } });
    await cp.call("POST", cp.org("/budgets"), { body: { name: "alice-daily", scope: "user", target: alice.id, period: "day", unit: "tokens", limit: 100 } });
    const s = await signInSession(cp);
    const res = await cp.app.handle(new Request("http://localhost/usage", { headers: { cookie: s.cookie } }));
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain("alice-daily");
    expect(page).toContain("85 / 100 tokens");
    expect(page).toContain('<span class="badge badge-warn">85 %</span>');
    expect(page).toContain("alice@example.com: 85 tokens</title>");
    expect(page).toContain("gpt-x: 85 tokens</title>");
    expect(page).toContain('aria-current="page">Usage and budgets');
  });
});
