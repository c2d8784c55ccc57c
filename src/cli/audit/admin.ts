// How `svc audit list|show` print admin events (kind "admin", issue 27): who acted (account or
// system component, credential, address, user agent), what they did to which target, the
// result, and the change field by field. Pure.
import type { AuditRecordView } from "../../contract/admin-api.ts";
import { type AdminEventDetail, fieldChanges } from "../../contract/admin-event.ts";
import { type Column, shortTime } from "../shared/output.ts";

/** The columns of an admin-event listing. */
export const ADMIN_COLUMNS: Column<AuditRecordView>[] = [
  { header: "ID", value: (r) => r.id },
  { header: "TIME", value: (r) => shortTime(r.ts) },
  { header: "ACTION", value: (r) => r.action },
  { header: "ACTOR", value: (r) => (r.admin ? actorLabel(r.admin) : r.actor_id) },
  { header: "TARGET", value: (r) => (r.admin ? targetLabel(r.admin) : r.target) },
  { header: "RESULT", value: (r) => (r.admin ? resultLabel(r.admin) : r.decision) },
  { header: "ADDRESS", value: (r) => r.admin?.actor.ip ?? null },
];

export function actorLabel(d: AdminEventDetail): string {
  return d.actor.email ? `${d.actor.email}${d.actor.role ? ` (${d.actor.role})` : ""}` : d.actor.id;
}

export function targetLabel(d: AdminEventDetail): string {
  const { type, id, name } = d.target;
  return name && name !== id ? `${type} ${name}${id ? ` (${id})` : ""}` : `${type}${id ? ` ${id}` : ""}`;
}

function resultLabel(d: AdminEventDetail): string {
  return d.result === "ok" ? "ok" : `refused ${d.status}${d.code ? ` ${d.code}` : ""}`;
}

const show = (v: unknown) => (v === undefined ? "(none)" : typeof v === "string" ? v : JSON.stringify(v));

/**
 * The change as lines `field: before → after` for each top-level field that differs (an added
 * one shows `(none) → …`, a removed one `… → (none)`). A creation lists what was made, a
 * deletion what was removed.
 */
export function changeLines(before: unknown, after: unknown): string[] {
  return fieldChanges(before, after)
    .filter((c) => c.changed)
    .map((c) => `  ${c.field}: ${show(c.before)} → ${show(c.after)}`);
}

/** The "key: value" fields `svc audit show` prints for an admin event, and its change. */
export function adminFields(r: AuditRecordView): { fields: [string, string | number | null][]; change: string[] } {
  const d = r.admin!;
  const c = d.actor.credential;
  return {
    fields: [
      ["id", r.id],
      ["time", r.ts],
      ["kind", "admin"],
      ["action", r.action],
      ["actor", actorLabel(d)],
      ["actor id", d.actor.id],
      ["credential", `${c.kind}${c.id ? ` ${c.id}` : ""}`],
      ["address", d.actor.ip],
      ["user agent", d.actor.user_agent],
      ["target", targetLabel(d)],
      ["result", resultLabel(d)],
      ["status", d.status],
      ["severity", d.severity],
      ["reason", r.reason],
      ["workspace", r.workspace_id === "controlplane" ? null : r.workspace_id],
      ["about record", r.ref],
      ["chain", typeof r.chain_seq === "number" ? `${r.chain_id} #${r.chain_seq}` : null],
    ],
    change: changeLines(d.before, d.after),
  };
}
