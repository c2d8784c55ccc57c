import { describe, expect, test } from "bun:test";
import type { AuditRecord } from "./audit.ts";
import { auditRecordProblem } from "./audit-check.ts";
import { newId } from "./ids.ts";

const record = (over: Partial<AuditRecord> = {}): AuditRecord => ({
  id: newId("auditRecord"),
  ts: new Date().toISOString(),
  kind: "tool",
  harness: "chatui",
  organization_id: "org_1",
  workspace_id: "ws_1",
  installation_id: "inst_1",
  agent_id: "agt_1",
  action: "tool:crm.read",
  tool_name: "crm.read",
  decision: "permit",
  reason: "policy",
  policy_id: "pol_1",
  policy_revision: 1,
  subject: { user_id: "usr_1", remote_user_id: "fe-1", via_installation: false },
  args_digest: `hmac-sha256:${"0".repeat(64)}`,
  digest_key_id: "dk_1",
  recipient_key_ids: [],
  ciphertext: null,
  ...over,
});

describe("auditRecordProblem with the record's JSON text", () => {
  test("a NUL anywhere is found, with or without the text", () => {
    for (const r of [record({ tool_name: "crm.read\u0000x", action: "tool:crm.read\u0000x" }), record({ subject: { user_id: "usr_1", remote_user_id: "fe\u0000", via_installation: false } })]) {
      expect(auditRecordProblem(r)).toBe("a text field contains a NUL character");
      expect(auditRecordProblem(r, JSON.stringify(r))).toBe("a text field contains a NUL character");
    }
  });

  test("a backslash followed by u0000 is text, not a NUL", () => {
    const r = record({ subject: { user_id: "usr_1", remote_user_id: "fe\\u0000", via_installation: false } });
    expect(JSON.stringify(r)).toContain("\\u0000");
    expect(auditRecordProblem(r, JSON.stringify(r))).toBeNull();
    expect(auditRecordProblem(record(), JSON.stringify(record()))).toBeNull();
  });
});
