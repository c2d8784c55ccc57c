// Audit records as Elastic Common Schema 9.4.0 documents (docs/siem.md "ECS", field by field):
// event.* classifies (categories and types from ECS's allowed values, the same class choice as
// OCSF's), user.* is who acted (user.target.* whom an account event is about), rule.* the policy
// that decided, gen_ai.* the model and its tokens. svc's own fields go under `svc.*` (ECS's rule
// for custom fields: a namespace of their own), the whole record in event.original. Pure.
// Checked field by field against the vendored ECS field reference in siem-formats.test.ts.
import { VERSION } from "../../version.ts";
import { adminActivity } from "./ocsf-admin.ts";
import { PRODUCT, type SiemRecord, compact, original, severityLevel, succeeded, svcFields } from "./siem-record.ts";

export const ECS_VERSION = "9.4.0";

/** Target types whose target is a person (user.target.*). */
const PERSON_TARGETS = new Set(["member", "user", "account", "invite", "remote_identity"]);

function categorize(r: SiemRecord): { category: string[]; type: string[] } {
  if (r.kind === "outcome") return { category: ["api"], type: ["end"] };
  if (r.kind !== "admin" || !r.admin) return { category: ["api"], type: ["access", r.decision === "permit" ? "allowed" : r.decision === "deny" ? "denied" : "info"] };
  const a = adminActivity(r.action);
  const verb = a.activity_id === 1 ? "creation" : (a.class_uid === 3001 && a.activity_id === 6) || (a.class_uid === 3004 && a.activity_id === 4) ? "deletion" : "change";
  switch (a.class_uid) {
    case 3001:
      return { category: ["iam"], type: ["user", verb] };
    case 3002:
      return { category: ["authentication"], type: [a.activity_id === 1 ? "start" : a.activity_id === 2 ? "end" : "info"] };
    case 3004:
      return { category: ["configuration"], type: [verb] };
    case 6003:
      return { category: ["api"], type: [r.admin.result === "refused" ? "denied" : "info"] };
  }
}

const outcome = (r: SiemRecord) => {
  const ok = succeeded(r);
  return ok === null ? "unknown" : ok ? "success" : "failure";
};

function who(r: SiemRecord) {
  if (!r.admin) return { user: compact({ id: r.subject.user_id ?? r.subject.remote_user_id ?? undefined, email: r.subject.email ?? undefined }) };
  const { actor, target } = r.admin;
  const person = PERSON_TARGETS.has(target.type) && (target.id || target.name);
  return {
    user: compact({
      id: actor.id,
      email: actor.email ?? undefined,
      roles: actor.role ? [actor.role] : undefined,
      target: person ? compact({ id: target.id ?? undefined, name: target.name ?? undefined, email: target.name?.includes("@") ? target.name : undefined }) : undefined,
    }),
    ...(actor.ip ? { source: { ip: actor.ip } } : {}),
    ...(actor.user_agent ? { user_agent: { original: actor.user_agent } } : {}),
  };
}

/** One record as an ECS document (nested objects; each leaf is an ECS field or under svc.*). */
export function ecsDocument(r: SiemRecord): Record<string, unknown> {
  const d = r.admin;
  const related = [...new Set([r.subject.user_id, r.subject.email, r.actor_id, d?.actor.email].filter((x): x is string => !!x))];
  return {
    "@timestamp": r.ts,
    message: d
      ? `${r.action} ${d.result}${d.actor.email ? ` by ${d.actor.email}` : ""}`
      : r.kind === "outcome"
        ? `${r.action}: ${r.outcome ?? "no outcome"}`
        : `${r.decision} ${r.action}: ${r.reason}`,
    ecs: { version: ECS_VERSION },
    event: compact({
      id: r.id,
      kind: "event",
      module: "svc",
      dataset: "svc.audit",
      provider: r.kind === "admin" ? "svc-controlplane" : r.harness,
      ...categorize(r),
      action: r.action,
      outcome: outcome(r),
      reason: d ? (d.code ?? undefined) : r.kind === "outcome" ? undefined : r.reason,
      severity: severityLevel(r),
      ingested: r.received_at,
      duration: r.duration_ms === undefined ? undefined : r.duration_ms * 1_000_000,
      sequence: r.store?.seq ?? undefined,
      original: original(r),
    }),
    ...(r.policy_id && r.kind !== "outcome" && !d ? { rule: { id: r.policy_id, version: String(r.policy_revision) } } : {}),
    ...who(r),
    ...(related.length > 0 ? { related: { user: related, ...(d?.actor.ip ? { ip: [d.actor.ip] } : {}) } } : {}),
    organization: { id: r.organization_id },
    observer: { vendor: PRODUCT.vendor, product: PRODUCT.name, version: VERSION },
    ...(d && d.status > 0 ? { http: { response: { status_code: d.status } } } : {}),
    ...(d?.code ? { error: { code: d.code } } : {}),
    ...(r.model
      ? {
          gen_ai: compact({
            request: { model: r.model },
            usage: r.prompt_tokens !== undefined || typeof r.completion_tokens === "number" ? compact({ input_tokens: r.prompt_tokens, output_tokens: r.completion_tokens ?? undefined }) : undefined,
          }),
        }
      : {}),
    svc: compact({
      ...svcFields(r),
      tool_name: r.tool_name ?? undefined,
      target_type: d?.target.type,
      target_id: d?.target.id ?? undefined,
      credential: d?.actor.credential.kind,
      credential_id: d?.actor.credential.id ?? undefined,
      severity: d?.severity,
    }),
  };
}
