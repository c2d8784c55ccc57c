// Audit records for tests of the spool and the shipper.
import type { AuditRecord } from "../../contract/audit.ts";
import { newId } from "../../contract/ids.ts";

export function fakeRecord(over: Partial<AuditRecord> = {}): AuditRecord {
  // the id made at the record's time, as the recorder makes it
  const ts = over.ts ?? new Date().toISOString();
  return {
    id: newId("auditRecord", Date.parse(ts)),
    ts,
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
  };
}
