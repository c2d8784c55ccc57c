// Steps 1 and 2 of the pipeline: who calls (the front-end user resolved through the bundle's
// identity map; a user linked to a disabled service user is refused here, under that user)
// and what policy decides (policies, their conditions, shadow policies). This is
// the one place the pipeline asks the policy index (../policy/policy-index.ts, the same
// functions `svc policies test` calls) for a decision; the gateway's tools/list asks through
// `wouldPermit` here too.
import type { AuditSubject } from "../../contract/audit.ts";
import type { PolicyBundle } from "../../contract/bundle.ts";
import type { FrontendUser } from "../../contract/local-api.ts";
import { type CompiledBundle, type Decision, decideModel, decideTool, MODEL_ACTION } from "../policy/policy-index.ts";
import { MODEL_NOT_FOUND, type Refusal } from "./refusals.ts";

export type PolicyCall = { kind: "tool"; tool: string; args: unknown } | { kind: "model"; model: string | null };

/** Per bundle: front-end user id → the disabled service user it is linked to. */
const disabledIndex = new WeakMap<PolicyBundle, ReadonlyMap<string, string>>();

/**
 * Step 1 for a user of a disabled service user: the audit subject their refusal is recorded
 * under (the service user, not the installation); null for anyone else.
 */
export function disabledCaller(c: CompiledBundle, user: Pick<FrontendUser, "id"> | null): AuditSubject | null {
  const list = c.bundle.disabled_identities;
  if (!user || !list || list.length === 0) return null;
  let index = disabledIndex.get(c.bundle);
  if (!index) disabledIndex.set(c.bundle, (index = new Map(list.map((d) => [d.remote_user_id, d.user_id]))));
  const userId = index.get(user.id);
  return userId === undefined ? null : { user_id: userId, remote_user_id: user.id, via_installation: false };
}

/** The action a call is decided and audited as: `tool:<name>` or `model:invoke`. */
export function actionOf(call: PolicyCall): string {
  return call.kind === "tool" ? `tool:${call.tool}` : MODEL_ACTION;
}

/** What policy decides for this caller and call, at `now`. */
export function policyDecision(c: CompiledBundle, user: Pick<FrontendUser, "id"> | null, call: PolicyCall, now: Date): Decision {
  return call.kind === "tool" ? decideTool(c, user, call.tool, { args: call.args, now }) : decideModel(c, user, now);
}

/** The models the profile offers; a permitted caller naming another is refused (404 model_not_found). */
export function modelRefusal(c: CompiledBundle, model: string | null): Refusal | null {
  const profile = c.bundle.model_profile;
  if (!profile || model === null) return null;
  const offered = profile.models.length > 0 ? profile.models : [profile.default_model];
  if (offered.includes(model)) return null;
  return { code: MODEL_NOT_FOUND, reason: MODEL_NOT_FOUND, policyId: null, message: `model "${model}" is not offered by the model profile "${profile.display_name}" (offered: ${offered.join(", ")})` };
}
