// Audit records as OCSF 1.8.0 events (docs/siem.md "OCSF", field by field). A decision and its
// outcome are API Activity (6003) with the security_control profile: the call is the API
// operation, the decision is the control's action and disposition, the policy its policy. Admin
// events go to the class that fits their action (ocsf-admin.ts): Account Change (3001),
// Authentication (3002), Entity Management (3004), or API Activity for a refused request.
// Each event keeps the record whole in `raw_data` and svc's own fields in `unmapped`. Pure.
// Validated against the vendored schema in siem-formats.test.ts.
import { VERSION } from "../../version.ts";
import { type OcsfActivity, adminActivity } from "./ocsf-admin.ts";
import { PRODUCT, type SiemRecord, compact, isPerson, ms, original, severityLevel, succeeded, svcFields } from "./siem-record.ts";

export const OCSF_VERSION = "1.8.0";

const CLASSES = {
  3001: { name: "Account Change", category: 3 },
  3002: { name: "Authentication", category: 3 },
  3004: { name: "Entity Management", category: 3 },
  6003: { name: "API Activity", category: 6 },
} as const;
const CATEGORIES = { 3: "Identity & Access Management", 6: "Application Activity" } as const;
const SEVERITIES = { 1: "Informational", 2: "Low", 3: "Medium", 4: "High" } as const;

export type OcsfEvent = Record<string, unknown> & { class_uid: number; activity_id: number; type_uid: number };

/** The classification every event starts with: class, category, activity, type (class_uid × 100 + activity_id), severity. */
function classify(r: SiemRecord, a: OcsfActivity) {
  const cls = CLASSES[a.class_uid];
  const severity = severityLevel(r);
  return {
    class_uid: a.class_uid,
    class_name: cls.name,
    category_uid: cls.category,
    category_name: CATEGORIES[cls.category],
    activity_id: a.activity_id,
    activity_name: a.activity_name,
    type_uid: a.class_uid * 100 + a.activity_id,
    type_name: `${cls.name}: ${a.activity_name}`,
    severity_id: severity,
    severity: SEVERITIES[severity],
  };
}

function metadata(r: SiemRecord, profiles: string[]) {
  return compact({
    version: OCSF_VERSION,
    uid: r.id,
    product: { name: PRODUCT.name, vendor_name: PRODUCT.vendor, version: VERSION },
    profiles,
    log_name: "svc:audit",
    event_code: r.action,
    tenant_uid: r.organization_id,
    // A decision and its outcome share the decision's id.
    correlation_uid: r.kind === "outcome" ? (r.ref ?? undefined) : r.kind === "admin" ? undefined : r.id,
    original_time: r.ts,
    logged_time: ms(r.received_at),
    sequence: r.store?.seq ?? undefined,
  });
}

/** status_id: 1 Success, 2 Failure, 0 Unknown (a permitted call whose outcome is its own event, an ask). */
function status(r: SiemRecord) {
  const ok = succeeded(r);
  return ok === null ? { status_id: 0, status: "Unknown" } : ok ? { status_id: 1, status: "Success" } : { status_id: 2, status: "Failure" };
}

/** The governed call: the runtime's installation is the source, the chat user the actor. */
function callActor(r: SiemRecord) {
  const { user_id, email, remote_user_id } = r.subject;
  const user = user_id
    ? compact({ uid: user_id, email_addr: email ?? undefined, uid_alt: remote_user_id ?? undefined, type_id: 1, type: "User" })
    : remote_user_id
      ? { uid_alt: remote_user_id, name: remote_user_id, type_id: 1, type: "User" }
      : undefined;
  return compact({ user, app_name: r.harness, app_uid: r.installation_id });
}

/** The control's verdict (security_control profile): permit Allowed, deny Denied/Blocked, ask Other/Challenge. */
const VERDICT = {
  permit: { action_id: 1, action: "Allowed", disposition_id: 1, disposition: "Allowed" },
  deny: { action_id: 2, action: "Denied", disposition_id: 2, disposition: "Blocked" },
  ask: { action_id: 99, action: "Ask", disposition_id: 23, disposition: "Challenge" },
} as const;

function callEvent(r: SiemRecord): OcsfEvent {
  const outcome = r.kind === "outcome";
  const name = outcome ? `${r.model ? "Model" : "Tool"} Call Outcome` : r.kind === "model" ? "Model Call" : "Tool Call";
  return {
    ...classify(r, { class_uid: 6003, activity_id: 99, activity_name: name }),
    time: ms(r.ts),
    message: outcome ? `${r.action}: ${r.outcome ?? "no outcome"}` : `${r.decision} ${r.action}: ${r.reason}`,
    metadata: metadata(r, outcome ? [] : ["security_control"]),
    ...status(r),
    ...(outcome
      ? compact({ status_code: r.outcome ?? undefined, status_detail: r.exit_code === null ? undefined : `exit code ${r.exit_code}` })
      : { status_detail: r.reason, ...VERDICT[r.decision], is_alert: r.decision === "deny" }),
    actor: callActor(r),
    api: compact({ operation: r.action, service: r.tool_server ? { name: r.tool_server } : undefined }),
    src_endpoint: compact({ uid: r.installation_id, instance_uid: r.replica_id ?? undefined, svc_name: r.harness }),
    resources: [
      r.tool_name ? compact({ type: "tool", name: r.tool_name, group: r.tool_server ? { name: r.tool_server } : undefined }) : null,
      r.model ? { type: "model", name: r.model } : null,
    ].filter((x) => x !== null),
    ...(r.policy_id && !outcome ? { policy: { uid: r.policy_id, version: String(r.policy_revision), is_applied: true } } : {}),
    ...(r.duration_ms !== undefined ? { duration: r.duration_ms } : {}),
    raw_data: original(r),
    unmapped: compact({ ...svcFields(r), prompt_tokens: r.prompt_tokens, completion_tokens: r.completion_tokens }),
  } as OcsfEvent;
}

/** An admin event's actor: the person (or system component), how they proved it, from where. */
function adminActor(r: SiemRecord) {
  const a = r.admin!.actor;
  const type =
    a.id === "anonymous"
      ? { type_id: 0, type: "Unknown" }
      : !isPerson(a.id)
        ? { type_id: 3, type: "System" }
        : a.role === "owner" || a.role === "admin"
          ? { type_id: 2, type: "Admin" }
          : { type_id: 1, type: "User" };
  return compact({
    user: compact({ uid: a.id, email_addr: a.email ?? undefined, ...type }),
    session: a.credential.kind === "session" && a.credential.id ? { uid: a.credential.id } : undefined,
    app_name: a.credential.kind === "system" ? "svc-controlplane" : undefined,
  });
}

/** The user an account event is about: the target (a member, user, account), else the actor. */
function targetUser(r: SiemRecord) {
  const t = r.admin!.target;
  const email = t.name && t.name.includes("@") ? t.name : undefined;
  return t.id || t.name ? compact({ uid: t.id ?? undefined, name: t.name ?? undefined, email_addr: email }) : adminActor(r).user;
}

function adminEvent(r: SiemRecord): OcsfEvent {
  const d = r.admin!;
  const a = adminActivity(r.action);
  const refused = d.result === "refused";
  const base = {
    ...classify(r, a),
    time: ms(r.ts),
    message: `${r.action} ${d.result}${d.actor.email ? ` by ${d.actor.email}` : ""}`,
    metadata: metadata(r, a.class_uid === 6003 ? ["security_control"] : []),
    ...status(r),
    status_code: String(d.status),
    ...(d.code ? { status_detail: d.code } : {}),
    actor: adminActor(r),
    ...(d.actor.ip || a.class_uid === 6003 ? { src_endpoint: compact({ ip: d.actor.ip ?? undefined, uid: d.actor.ip ? undefined : d.actor.id }) } : {}),
    ...(d.actor.user_agent ? { http_request: { user_agent: d.actor.user_agent } } : {}),
    raw_data: original(r),
    unmapped: compact({ ...svcFields(r), target_type: d.target.type, credential: d.actor.credential.kind, credential_id: d.actor.credential.id ?? undefined }),
  };
  const entity = compact({ uid: d.target.id ?? undefined, name: d.target.name ?? (d.target.id ? undefined : d.target.type), type: d.target.type });
  switch (a.class_uid) {
    case 3001:
      return { ...base, user: targetUser(r) } as OcsfEvent;
    case 3002:
      return {
        ...base,
        user: targetUser(r),
        service: { name: "svc console" },
        ...(d.actor.credential.kind === "session" && d.actor.credential.id ? { session: { uid: d.actor.credential.id } } : {}),
      } as OcsfEvent;
    case 3004:
      return { ...base, entity: d.before === undefined ? entity : { ...entity, data: d.before }, ...(d.after !== undefined ? { entity_result: { ...entity, data: d.after } } : {}) } as OcsfEvent;
    case 6003:
      return {
        ...base,
        api: { operation: r.action },
        resources: [entity],
        action_id: refused ? 2 : 99,
        action: refused ? "Denied" : "Other",
        disposition_id: refused ? 26 : 17,
        disposition: refused ? "Unauthorized" : "Logged",
        is_alert: true,
      } as OcsfEvent;
  }
}

/** One record as an OCSF event. */
export function ocsfEvent(r: SiemRecord): OcsfEvent {
  return r.kind === "admin" && r.admin ? adminEvent(r) : callEvent(r);
}
