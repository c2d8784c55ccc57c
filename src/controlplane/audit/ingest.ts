// Audit ingest (POST /api/v1/runtime/audit-records): a batch from one installation's shipper
// is stored in one transaction through one prepared statement. Insert-or-ignore by record id
// makes a batch resent after a crash harmless; every id stored, new or not, is acknowledged.
// A record that is not the caller's (another installation or organization, or an id already
// held by another installation's record) is not stored and is named in `rejected` with the
// reason; the rest of the batch is stored all the same, so one bad record never blocks a
// shipper. Resending gives the same answer. Ciphertext is stored as bytes and never looked into.
import type { Database, Statement } from "bun:sqlite";
import type { AuditRecord } from "../../contract/audit.ts";
import type { AuditBatchResponse } from "../../contract/runtime-api.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";

const COLUMNS = [
  "id", "org_id", "workspace_id", "installation_id", "agent_id", "replica_id", "ts", "kind", "harness", "action",
  "tool_name", "model", "decision", "reason", "policy_id", "policy_revision", "user_id", "remote_user_id",
  "via_installation", "ref", "outcome", "exit_code", "args_digest", "digest_key_id", "recipient_key_ids",
  "ciphertext", "received_at",
] as const;

type Value = string | number | null | Uint8Array;
type Statements = { insert: Statement<unknown, Value[]>; outcome: Statement<unknown, Value[]>; owner: Statement<{ org_id: string; installation_id: string }, [string]> };

const cache = new WeakMap<Database, Statements>();

function statements(client: Database): Statements {
  let s = cache.get(client);
  if (!s) {
    s = {
      insert: client.prepare(
        `INSERT INTO audit_records (${COLUMNS.join(", ")}) VALUES (${COLUMNS.map(() => "?").join(", ")}) ON CONFLICT(id) DO NOTHING`,
      ),
      outcome: client.prepare("UPDATE audit_records SET outcome = ?, exit_code = ? WHERE id = ? AND org_id = ? AND installation_id = ?"),
      owner: client.prepare("SELECT org_id, installation_id FROM audit_records WHERE id = ?"),
    };
    cache.set(client, s);
  }
  return s;
}

/** Why a record is not the caller's to store; null when it is (it names the caller's installation and organization). */
export function ownershipProblem(r: AuditRecord, caller: Pick<RuntimeCaller, "installationId" | "orgId">): string | null {
  if (r.installation_id === caller.installationId && r.organization_id === caller.orgId) return null;
  return `record ${r.id} belongs to installation ${r.installation_id} of organization ${r.organization_id}, not to the calling installation ${caller.installationId}`;
}

/** One record as the row values, in COLUMNS order. */
export function recordRow(r: AuditRecord, receivedAt: number): Value[] {
  return [
    r.id, r.organization_id, r.workspace_id, r.installation_id, r.agent_id, r.replica_id ?? null, Date.parse(r.ts), r.kind,
    r.harness, r.action, r.tool_name, r.model ?? null, r.decision, r.reason, r.policy_id ?? null, r.policy_revision,
    r.subject.user_id, r.subject.remote_user_id, r.subject.via_installation ? 1 : 0, r.ref ?? null, r.outcome ?? null,
    r.exit_code ?? null, r.args_digest, r.digest_key_id, JSON.stringify(r.recipient_key_ids),
    r.ciphertext === null ? null : Buffer.from(r.ciphertext, "base64"), receivedAt,
  ];
}

export function ingestBatch(deps: ControlPlaneDeps, caller: RuntimeCaller, records: readonly AuditRecord[]): AuditBatchResponse {
  const client = deps.db.$client;
  const s = statements(client);
  const receivedAt = deps.now();
  const acknowledged: string[] = [];
  const rejected: { id: string; reason: string }[] = [];
  let inserted = 0;
  client
    .transaction(() => {
      for (const r of records) {
        const problem = ownershipProblem(r, caller);
        if (problem) {
          rejected.push({ id: r.id, reason: problem });
          continue;
        }
        if (s.insert.run(...recordRow(r, receivedAt)).changes === 0) {
          // A duplicate is acknowledged only when the stored record is the caller's own.
          const held = s.owner.get(r.id);
          if (held && (held.installation_id !== caller.installationId || held.org_id !== caller.orgId)) {
            rejected.push({ id: r.id, reason: `record id ${r.id} is already used by another installation's record` });
            continue;
          }
          acknowledged.push(r.id);
          continue;
        }
        inserted++;
        acknowledged.push(r.id);
        // An outcome completes its decision record; applied once, when the outcome is new.
        if (r.kind === "outcome" && r.ref) s.outcome.run(r.outcome ?? null, r.exit_code ?? null, r.ref, caller.orgId, caller.installationId);
      }
    })
    .immediate();
  return { acknowledged, inserted, duplicates: acknowledged.length - inserted, rejected };
}
