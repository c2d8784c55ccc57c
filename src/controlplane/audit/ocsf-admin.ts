// Which OCSF class and activity each admin action is (docs/siem.md "OCSF: admin events").
// Keyed by every action of contract/admin-event.ts ADMIN_ACTIONS, so a new action does not
// compile until it is placed here. Pure.
import { type AdminAction, isAdminAction } from "../../contract/admin-event.ts";

export type OcsfActivity = { class_uid: 3001 | 3002 | 3004 | 6003; activity_id: number; activity_name: string };

/** Account Change (3001): what happens to a person's account, membership or password. */
const account = (activity_id: number, activity_name: string): OcsfActivity => ({ class_uid: 3001, activity_id, activity_name });
/** Authentication (3002): console sign-in and sign-out, and approving a `svc login`. */
const auth = (activity_id: number, activity_name: string): OcsfActivity => ({ class_uid: 3002, activity_id, activity_name });
/** Entity Management (3004): every other resource of the admin plane. */
const entity = (activity_id: number, activity_name: string): OcsfActivity => ({ class_uid: 3004, activity_id, activity_name });
const [CREATE, UPDATE, DELETE, ENABLE, DISABLE] = [entity(1, "Create"), entity(3, "Update"), entity(4, "Delete"), entity(8, "Enable"), entity(9, "Disable")];
const OTHER = (name: string) => entity(99, name);

export const ADMIN_OCSF: Record<AdminAction, OcsfActivity> = {
  "organization.bootstrap": CREATE,
  "workspace.create": CREATE,
  "member.add": account(1, "Create"),
  "member.role_change": account(99, "Role Change"),
  "member.remove": account(6, "Delete"),
  "invite.create": CREATE,
  "invite.accept": account(3, "Password Change"),
  "settings.update": UPDATE,
  "sso.configure": UPDATE,
  "sso.remove": DELETE,
  "api_token.create": CREATE,
  "api_token.revoke": DELETE,
  "login_request.approve": auth(99, "Login Approval"),
  "session.sign_in": auth(1, "Logon"),
  "session.sign_in_failed": auth(1, "Logon"),
  "session.locked_out": account(9, "Lock"),
  "session.sign_out": auth(2, "Logoff"),
  "user.create": account(1, "Create"),
  "user.disable": account(5, "Disable"),
  "user.enable": account(2, "Enable"),
  "remote_identity.link": account(99, "Link Identity"),
  "remote_identity.unlink": account(99, "Unlink Identity"),
  "remote_identity.claim": account(99, "Link Identity"),
  "group.create": CREATE,
  "group.member_add": UPDATE,
  "group.member_remove": UPDATE,
  "directory_sync.configure": UPDATE,
  "directory_sync.enable": ENABLE,
  "directory_sync.disable": DISABLE,
  "directory_sync.run": OTHER("Run"),
  "agent.create": CREATE,
  "installation.create": CREATE,
  "installation.delete": DELETE,
  "runtime_credential.issue": CREATE,
  "runtime_credential.rotate": UPDATE,
  "model_profile.create": CREATE,
  "model_profile.api_key_set": UPDATE,
  "model_profile.prices_set": UPDATE,
  "model_profile.assign": UPDATE,
  "tool_server.create": CREATE,
  "tool_server.update": UPDATE,
  "tool_server.secrets_set": UPDATE,
  "tool_server.tools_set": UPDATE,
  "tool_server.delete": DELETE,
  "tool_server.assign": UPDATE,
  "tool_server.unassign": UPDATE,
  "tool_server.token_revoke": DELETE,
  "tool_server.listing_connect": CREATE,
  "tool_server.consent_refuse": OTHER("Refuse"),
  "policy.create": CREATE,
  "policy.update": UPDATE,
  "policy.delete": DELETE,
  "policy.apply": UPDATE,
  "budget.create": CREATE,
  "budget.delete": DELETE,
  "audit_key.create": CREATE,
  "audit_key.disable": DISABLE,
  "audit:recovery.request": CREATE,
  "audit:recovery.approve": OTHER("Approve"),
  "audit:recovery.decrypt": OTHER("Decrypt"),
  "audit:recovery.policy": UPDATE,
  "signing_key.rotate": UPDATE,
  "digest_key.rotate": UPDATE,
  "assertion_key.rotate": UPDATE,
  "audit_verification.run": OTHER("Verification Run"),
  "audit_retention.run": OTHER("Retention Run"),
  "siem_sink.create": CREATE,
  "siem_sink.delete": DELETE,
  "siem_sink.update": UPDATE,
  "access.refused": { class_uid: 6003, activity_id: 99, activity_name: "Refused Request" },
  "access.refusals_suppressed": { class_uid: 6003, activity_id: 99, activity_name: "Refusals Suppressed" },
};

/** The class and activity of an admin action; an action this build does not know is Entity Management "Other". */
export function adminActivity(action: string): OcsfActivity {
  return isAdminAction(action) ? ADMIN_OCSF[action] : OTHER(action);
}
