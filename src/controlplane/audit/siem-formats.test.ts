// OCSF and ECS output of every record kind, validated against the vendored schemas
// (test/support/siem-schemas/: OCSF 1.8.0 compiled from ocsf/ocsf-schema, ECS 9.4.0's
// ecs_flat.yml): required attributes, types, enum values, profiles and constraints; ECS field
// by field. The validators are checked to fail on broken events first. Pure.
import { describe, expect, test } from "bun:test";
import { ADMIN_ACTIONS, type AdminAction, type AdminEventDetail } from "../../contract/admin-event.ts";
import { ecsLeaves, ecsProblems, ocsfProblems, OCSF_SCHEMA_VERSION, ECS_SCHEMA_VERSION } from "../../../test/support/siem-schemas/validate.ts";
import { ECS_VERSION, ecsDocument } from "./ecs.ts";
import { OCSF_VERSION, ocsfEvent } from "./ocsf.ts";
import { ADMIN_OCSF } from "./ocsf-admin.ts";
import type { SiemRecord } from "./siem-record.ts";

const call = (over: Partial<SiemRecord> = {}): SiemRecord =>
  ({
    id: "rec_01CALL",
    ts: "2026-11-25T17:00:00.123Z",
    received_at: "2026-11-25T17:00:01.000Z",
    kind: "tool",
    harness: "openwebui",
    organization_id: "org_1",
    workspace_id: "ws_1",
    installation_id: "inst_1",
    agent_id: "agt_1",
    replica_id: "rep_1",
    action: "tool:crm.read",
    tool_name: "crm.read",
    tool_server: "crm",
    model: null,
    decision: "deny",
    reason: "crm is read-only for contractors",
    policy_id: "pol_1",
    policy_revision: 3,
    subject: { user_id: "usr_1", email: "ada@example.com", remote_user_id: "fe_1", via_installation: false },
    ref: null,
    outcome: null,
    exit_code: null,
    args_digest: "hmac-sha256:abcd",
    digest_key_id: "dk_1",
    encryption: { mode: "recipients", key_ids: ["ak_1"] },
    store: { chain: "store", seq: 7, prev: "00" },
    ciphertext_sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    ...over,
  }) as SiemRecord;

const model = call({
  id: "rec_02MODEL",
  kind: "model",
  action: "model:gpt-4o",
  tool_name: null,
  tool_server: undefined,
  model: "gpt-4o",
  decision: "permit",
  policy_id: null,
  prompt_tokens: 120,
  completion_tokens: 40,
  cost: 0.002,
});
const outcome = call({
  id: "rec_03OUT",
  kind: "outcome",
  ref: "rec_01CALL",
  decision: "permit",
  outcome: "error",
  exit_code: 2,
  duration_ms: 840,
  upstream_identity: { kind: "assertion", jti: "j-1", subject: "usr_1" },
});
const ask = call({ id: "rec_04ASK", decision: "ask", subject: { user_id: null, email: null, remote_user_id: "fe_9", via_installation: true } });

function admin(action: AdminAction, over: Partial<AdminEventDetail> = {}): SiemRecord {
  const spec = ADMIN_ACTIONS[action];
  const detail: AdminEventDetail = {
    v: 1,
    actor: { id: "acc_1", email: "owner@example.com", role: "owner", credential: { kind: "session", id: "0123456789abcdef" }, ip: "198.51.100.7", user_agent: "Mozilla/5.0" },
    target: { type: spec.target, id: `${spec.target}_1`, name: spec.target === "member" ? "bob@example.com" : "a name" },
    before: { name: "old" },
    after: { name: "new", secret: "sha256:digest" },
    result: "ok",
    status: spec.status,
    severity: spec.severity,
    ...over,
  };
  return call({
    id: `rec_adm_${action}`,
    kind: "admin",
    action,
    tool_name: null,
    tool_server: undefined,
    decision: "permit",
    reason: "",
    policy_id: null,
    subject: { user_id: null, email: null, remote_user_id: null, via_installation: false },
    actor_id: detail.actor.id,
    target: detail.target.id ?? undefined,
    admin: detail,
    args_digest: null,
    ciphertext_sha256: null,
    store: { chain: "admin", seq: 3, prev: "00" },
  });
}

const everyAdminEvent = (Object.keys(ADMIN_ACTIONS) as AdminAction[]).flatMap((action) => [
  admin(action),
  admin(action, { result: "refused", code: "forbidden", status: 403, severity: "high", before: undefined, after: undefined }),
  admin(action, {
    actor: { id: "system:retention", email: null, role: null, credential: { kind: "system", id: null }, ip: null, user_agent: null },
    target: { type: ADMIN_ACTIONS[action].target, id: null },
    status: 0,
  }),
]);
const calls = [
  call(),
  call({ decision: "permit" }),
  ask,
  model,
  outcome,
  call({ kind: "outcome", ref: "rec_02MODEL", model: "gpt-4o", outcome: "ok", prompt_tokens: 10, completion_tokens: null, duration_ms: 12 }),
];

describe("the validators catch broken events", () => {
  test("OCSF: a missing required attribute, a wrong type, a value outside the enum, a profile not declared, an unknown attribute", () => {
    const good = ocsfEvent(call());
    expect(ocsfProblems(good)).toEqual([]);
    const { actor: _, ...noActor } = good;
    expect(ocsfProblems(noActor)).toContain("actor: required, missing");
    expect(ocsfProblems({ ...good, time: "2026-11-25" })).toContain('time: expected a long, got "2026-11-25"');
    expect(ocsfProblems({ ...good, action_id: 7 })).toContain("action_id: 7 is not one of 0, 1, 2, 3, 4, 99");
    expect(ocsfProblems({ ...good, metadata: { ...(good.metadata as object), profiles: [] } })).toContain("action_id: belongs to the security_control profile, not in metadata.profiles");
    expect(ocsfProblems({ ...good, decision: "deny" })).toContain("decision: not an attribute of this class or object");
    expect(ocsfProblems({ ...good, actor: { user: { email_addr: "not an email" } } })).toEqual(
      expect.arrayContaining(['actor.user.email_addr: "not an email" does not match email_t\'s pattern', "actor.user.: needs at least one of account, name, uid"]),
    );
    expect(ocsfProblems({ ...good, type_uid: 600301 })).toContain("type_uid: 600301 is not class_uid × 100 + activity_id");
  });

  test("ECS: a field that is not ECS, a wrong type, a value not allowed, a type not expected with the category", () => {
    const good = ecsDocument(call());
    expect(ecsProblems(good, ["svc"])).toEqual([]);
    expect(ecsProblems({ ...good, user: { identifier: "x" } }, ["svc"])).toContain("user.identifier: not an ECS 9.4.0 field");
    expect(ecsProblems({ ...good, event: { ...(good.event as object), severity: "high" } }, ["svc"])).toContain('event.severity: expected an integer (long), got "high"');
    expect(ecsProblems({ ...good, event: { ...(good.event as object), outcome: "denied" } }, ["svc"])).toContain('event.outcome: "denied" is not an allowed value');
    expect(ecsProblems({ ...good, event: { ...(good.event as object), category: ["session"], type: ["denied"] } }, ["svc"])).toContain(
      "event.type: denied is not expected with event.category session",
    );
    expect(ecsProblems({ ...good, event: { ...(good.event as object), action: ["a", "b"] } }, ["svc"])).toContain("event.action: ECS does not normalize this field to an array");
    expect(ecsProblems({ ...good, user: { name: "x" } }, ["user"])).toContain("user.name: the custom namespace collides with ECS");
  });
});

describe("OCSF", () => {
  test(`the vendored schema is the version emitted (${OCSF_VERSION})`, () => expect(OCSF_SCHEMA_VERSION).toBe(OCSF_VERSION));

  test("every call record kind validates: tool and model decisions (permit, deny, ask), outcomes", () => {
    for (const r of calls) expect({ id: r.id, problems: ocsfProblems(ocsfEvent(r)) }).toEqual({ id: r.id, problems: [] });
  });

  test("every admin action validates, done, refused and by the system, in the class the table names", () => {
    for (const r of everyAdminEvent) {
      const e = ocsfEvent(r);
      expect({ action: r.action, result: r.admin!.result, problems: ocsfProblems(e) }).toEqual({ action: r.action, result: r.admin!.result, problems: [] });
      expect(e.class_uid).toBe(ADMIN_OCSF[r.action as AdminAction].class_uid);
    }
  });

  test("a deny: API Activity, the control's Denied/Blocked, the policy, the user, status Failure; the record whole in raw_data", () => {
    const e = ocsfEvent(call());
    expect(e).toMatchObject({
      class_uid: 6003,
      category_uid: 6,
      activity_id: 99,
      type_uid: 600399,
      time: 1795626000123,
      severity_id: 3,
      action_id: 2,
      disposition_id: 2,
      status_id: 2,
      is_alert: true,
      api: { operation: "tool:crm.read", service: { name: "crm" } },
      actor: { user: { uid: "usr_1", email_addr: "ada@example.com", uid_alt: "fe_1" }, app_name: "openwebui", app_uid: "inst_1" },
      policy: { uid: "pol_1", version: "3", is_applied: true },
      metadata: { uid: "rec_01CALL", version: "1.8.0", tenant_uid: "org_1", correlation_uid: "rec_01CALL", profiles: ["security_control"], product: { name: "svc" } },
      unmapped: { args_digest: "hmac-sha256:abcd", ciphertext_sha256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
    });
    expect(JSON.parse(e.raw_data as string)).toEqual(call());
    // An outcome is correlated with its decision; an ask is neither allowed nor denied.
    expect(ocsfEvent(outcome)).toMatchObject({ metadata: { correlation_uid: "rec_01CALL" }, status_id: 2, status_code: "error", duration: 840 });
    expect(ocsfEvent(ask)).toMatchObject({ action_id: 99, action: "Ask", disposition_id: 23, status_id: 0, actor: { user: { uid_alt: "fe_9" } } });
  });

  test("admin events: the actor, the target in the class's own attribute, before and after in the entity, refusals as failures", () => {
    expect(ocsfEvent(admin("member.remove"))).toMatchObject({
      class_uid: 3001,
      activity_id: 6,
      user: { uid: "member_1", email_addr: "bob@example.com" },
      actor: { user: { uid: "acc_1", type_id: 2 }, session: { uid: "0123456789abcdef" } },
      src_endpoint: { ip: "198.51.100.7" },
      http_request: { user_agent: "Mozilla/5.0" },
      status_id: 1,
      severity_id: 2,
    });
    expect(ocsfEvent(admin("policy.update"))).toMatchObject({
      class_uid: 3004,
      activity_id: 3,
      entity: { uid: "policy_1", type: "policy", data: { name: "old" } },
      entity_result: { data: { name: "new" } },
    });
    expect(ocsfEvent(admin("session.sign_in_failed", { result: "refused", status: 401, code: "unauthorized" }))).toMatchObject({
      class_uid: 3002,
      activity_id: 1,
      status_id: 2,
      status_code: "401",
      status_detail: "unauthorized",
    });
    expect(ocsfEvent(admin("access.refused", { result: "refused", severity: "high" }))).toMatchObject({ class_uid: 6003, action_id: 2, disposition_id: 26, severity_id: 4 });
  });
});

describe("ECS", () => {
  test(`the vendored field reference is the version emitted (${ECS_VERSION})`, () => expect(ECS_SCHEMA_VERSION).toBe(ECS_VERSION));

  test("every record kind and every admin action is ECS field by field (svc's own fields under svc.*)", () => {
    for (const r of [...calls, ...everyAdminEvent]) expect({ id: r.id, problems: ecsProblems(ecsDocument(r), ["svc"]) }).toEqual({ id: r.id, problems: [] });
  });

  test("an MCP call's outcome names the identity presented upstream under svc.* (and OCSF's unmapped), never a token", () => {
    const leaves = Object.fromEntries(ecsLeaves(ecsDocument(outcome)));
    expect(leaves).toMatchObject({ "svc.upstream_identity_kind": "assertion", "svc.upstream_identity_subject": "usr_1", "svc.upstream_identity_jti": "j-1" });
    expect((ocsfEvent(outcome) as unknown as { unmapped: Record<string, unknown> }).unmapped).toMatchObject({
      upstream_identity_kind: "assertion",
      upstream_identity_subject: "usr_1",
      upstream_identity_jti: "j-1",
    });
  });

  test("a deny, field by field", () => {
    const leaves = Object.fromEntries(ecsLeaves(ecsDocument(call())));
    const { "event.original": orig, ...rest } = leaves;
    expect(JSON.parse(orig as string)).toEqual(call());
    expect(rest).toEqual({
      "@timestamp": "2026-11-25T17:00:00.123Z",
      message: "deny tool:crm.read: crm is read-only for contractors",
      "ecs.version": "9.4.0",
      "event.id": "rec_01CALL",
      "event.kind": "event",
      "event.module": "svc",
      "event.dataset": "svc.audit",
      "event.provider": "openwebui",
      "event.category": ["api"],
      "event.type": ["access", "denied"],
      "event.action": "tool:crm.read",
      "event.outcome": "failure",
      "event.reason": "crm is read-only for contractors",
      "event.severity": 3,
      "event.ingested": "2026-11-25T17:00:01.000Z",
      "event.sequence": 7,
      "rule.id": "pol_1",
      "rule.version": "3",
      "user.id": "usr_1",
      "user.email": "ada@example.com",
      "related.user": ["usr_1", "ada@example.com"],
      "organization.id": "org_1",
      "observer.vendor": "svc",
      "observer.product": "svc",
      "observer.version": expect.any(String),
      "svc.kind": "tool",
      "svc.harness": "openwebui",
      "svc.workspace_id": "ws_1",
      "svc.agent_id": "agt_1",
      "svc.installation_id": "inst_1",
      "svc.replica_id": "rep_1",
      "svc.tool_server": "crm",
      "svc.args_digest": "hmac-sha256:abcd",
      "svc.digest_key_id": "dk_1",
      "svc.ciphertext_sha256": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
      "svc.encryption": "recipients:ak_1",
      "svc.store_chain": "store",
      "svc.store_seq": 7,
      "svc.tool_name": "crm.read",
    });
  });

  test("a model call carries gen_ai.*; an admin event user.* (the actor), user.target.*, source.ip, the HTTP status", () => {
    expect(ecsDocument(model)).toMatchObject({ gen_ai: { request: { model: "gpt-4o" }, usage: { input_tokens: 120, output_tokens: 40 } }, event: { type: ["access", "allowed"], outcome: "success" } });
    expect(ecsDocument(admin("member.role_change"))).toMatchObject({
      event: { category: ["iam"], type: ["user", "change"], outcome: "success", action: "member.role_change" },
      user: { id: "acc_1", email: "owner@example.com", roles: ["owner"], target: { id: "member_1", email: "bob@example.com" } },
      source: { ip: "198.51.100.7" },
      user_agent: { original: "Mozilla/5.0" },
      http: { response: { status_code: 201 } },
    });
    expect(ecsDocument(admin("session.sign_out"))).toMatchObject({ event: { category: ["authentication"], type: ["end"] } });
  });
});
