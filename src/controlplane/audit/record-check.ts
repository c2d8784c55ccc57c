// Whether one record of a runtime's audit batch may be stored, and if not, why (pure: the
// caller passes the clock). A runtime token speaks for one installation, so each record must:
//   - have the contract's shape (src/contract/audit.ts `AuditRecord`, with its size bounds);
//   - carry no NUL character in any text (PostgreSQL text cannot hold one, and it would fail
//     the whole batch's transaction);
//   - name the caller's own organization, installation, workspace and agent (an installation's
//     workspace and agent never change);
//   - have a timestamp within the window: not older than `maxAgeMs`, not more than
//     `maxFutureMs` ahead of the control plane's clock.
//   - have an id made within ID_TIME_SLACK_MS of its timestamp: searches by time read the id
//     range (bounds.ts), so a record whose id says another time would hide from them;
//   - carry no field this release does not know (a newer proxy's: retryable, never dropped).
// A record that fails is rejected alone, with the reason and a code (contract
// AuditRejectionCode; `clock_skew` and `unsupported_field` are retryable); the rest of the batch is stored.
import { type AuditRecord, AuditRecord as AuditRecordSchema } from "../../contract/audit.ts";
import { BUILD_VERSION } from "../../version.ts";
import { auditRecordProblem } from "../../contract/audit-check.ts";
import type { AuditRejectionCode } from "../../contract/runtime-api.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";
import { idTime } from "../../contract/ids.ts";
import { ID_TIME_SLACK_MS } from "./bounds.ts";

export type TimeWindow = { now: number; maxAgeMs: number; maxFutureMs: number };
export type RecordVerdict = { ok: true; record: AuditRecord } | { ok: false; id: string; reason: string; code: AuditRejectionCode };

/** The id a rejection names: the record's own when it has a usable one, else its place in the batch. */
function nameOf(raw: unknown, index: number): string {
  const id = raw && typeof raw === "object" ? (raw as { id?: unknown }).id : undefined;
  return typeof id === "string" && id.length > 0 && id.length <= 64 ? id : `#${index}`;
}

/** The fields of the contract's record: anything else comes from a newer proxy. */
const KNOWN_FIELDS = new Set(Object.keys(AuditRecordSchema.properties));

/** Fields of a record this release does not know (none: an empty list). Pure. */
export function unknownFields(raw: unknown): string[] {
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) return [];
  return Object.keys(raw)
    .filter((k) => !KNOWN_FIELDS.has(k))
    .sort();
}

export function checkRecord(raw: unknown, index: number, caller: Pick<RuntimeCaller, "installationId" | "orgId" | "workspaceId" | "agentId">, window: TimeWindow): RecordVerdict {
  const id = nameOf(raw, index);
  // A newer proxy's field (a chain field, say) would be dropped by storing the rest: the record
  // is refused, retryably, and stored whole once this control plane is upgraded (issue 29).
  const unknown = unknownFields(raw);
  if (unknown.length > 0) {
    const names = unknown
      .slice(0, 5)
      .map((k) => k.slice(0, 40))
      .join(", ");
    return {
      ok: false,
      id,
      code: "unsupported_field",
      reason: `record ${id} carries field(s) this control plane (svc ${BUILD_VERSION}) does not know: ${names}; the runtime keeps it and sends it again: upgrade the control plane (docs/upgrade.md)`,
    };
  }
  const problem = auditRecordProblem(raw);
  if (problem) return { ok: false, id, code: "malformed", reason: `record ${id} is malformed: ${problem}` };
  const r = raw as AuditRecord;
  if (r.installation_id !== caller.installationId || r.organization_id !== caller.orgId) {
    return {
      ok: false,
      id,
      code: "not_this_installation",
      reason: `record ${id} belongs to installation ${r.installation_id} of organization ${r.organization_id}, not to the calling installation ${caller.installationId}`,
    };
  }
  if (r.workspace_id !== caller.workspaceId || r.agent_id !== caller.agentId) {
    return {
      ok: false,
      id,
      code: "not_this_installation",
      reason: `record ${id} names workspace ${r.workspace_id} and agent ${r.agent_id}; installation ${caller.installationId} is bound to workspace ${caller.workspaceId} and agent ${caller.agentId}`,
    };
  }
  const ts = Date.parse(r.ts);
  const made = idTime(r.id);
  if (made === null) return { ok: false, id, code: "malformed", reason: `record ${id} is malformed: its id does not start with a time (10 Crockford base-32 characters after rec_)` };
  if (Math.abs(made - ts) > ID_TIME_SLACK_MS) {
    return {
      ok: false,
      id,
      code: "malformed",
      reason: `record ${id} is malformed: its id was made at ${new Date(made).toISOString()}, more than ${ID_TIME_SLACK_MS / 60_000} minutes from its timestamp ${r.ts} (a record's id and timestamp are taken together)`,
    };
  }
  if (ts < window.now - window.maxAgeMs) {
    return { ok: false, id, code: "too_old", reason: `record ${id} has timestamp ${r.ts}, older than the ${Math.round(window.maxAgeMs / 86_400_000)} days the control plane accepts` };
  }
  if (ts > window.now + window.maxFutureMs) {
    // Retryable: the record is accepted once this clock catches up (the shipper sends it again).
    return {
      ok: false,
      id,
      code: "clock_skew",
      reason: `record ${id} has timestamp ${r.ts}, more than ${Math.round(window.maxFutureMs / 60_000)} minutes ahead of the control plane's clock; check the runtime's clock`,
    };
  }
  return { ok: true, record: r };
}
