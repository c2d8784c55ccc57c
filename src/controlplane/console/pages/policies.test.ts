// What the console says about shadow policies (issue 17): the would-be decision on an audit
// row, and the recent calls a shadow policy would have decided differently.
import { describe, expect, test } from "bun:test";
import { type AuditRecordView, shadowCell } from "./audit.ts";
import { shadowChanges } from "./policies.ts";

const rec = (over: Partial<AuditRecordView> = {}): AuditRecordView => ({
  id: "rec_01",
  ts: "2026-11-23T10:00:00.000Z",
  received_at: "2026-11-23T10:00:01.000Z",
  harness: "chatui",
  organization_id: "org_1",
  workspace_id: "ws_1",
  replica_id: null,
  model: null,
  policy_revision: 1,
  ref: null,
  outcome: null,
  exit_code: null,
  kind: "tool",
  action: "tool:crm.credit",
  tool_name: "crm.credit",
  decision: "permit",
  reason: "policy",
  policy_id: "pol_P",
  installation_id: "inst_1",
  agent_id: "agt_1",
  subject: { user_id: "usr_1", email: "ada@example.com", remote_user_id: "fe-ada", via_installation: false },
  args_digest: null,
  digest_key_id: null,
  encryption: { mode: "digest-only" },
  ...over,
});

describe("shadow in the console", () => {
  test("an audit row says what the shadow policies would have done, marked when it differs", () => {
    expect(shadowCell(rec())).toBe("");
    const changed = String(shadowCell(rec({ shadow: { decision: "deny", policy_id: "pol_S", reason: 'Refused (svc.denied): policy "big" denies tool:crm.credit' } })));
    expect(changed).toContain("badge-warn");
    expect(changed).toContain("shadow: would deny");
    expect(changed).toContain("pol_S");
    expect(changed).toContain("policy &quot;big&quot; denies");
    const same = String(shadowCell(rec({ shadow: { decision: "permit", policy_id: "pol_P", reason: "policy" } })));
    expect(same).toContain("shadow: same");
    expect(same).not.toContain("badge-warn");
  });

  test("the policies page lists the calls a shadow policy would have changed, by policy name", () => {
    const names = new Map([["pol_P", { name: "sales may credit" }], ["pol_S", { name: "no big credits" }]]);
    const table = String(shadowChanges([rec({ shadow: { decision: "deny", policy_id: "pol_S", reason: "x" } })], names));
    expect(table).toContain("sales may credit");
    expect(table).toContain("would deny");
    expect(table).toContain("no big credits");
    expect(table).toContain("ada@example.com");
    expect(String(shadowChanges([], names))).toContain("No recent call would have been decided differently");
  });
});
