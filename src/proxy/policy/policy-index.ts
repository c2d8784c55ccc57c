// The bundle compiled into a decision index (by destination, then subject) and the decisions
// made from it. Pure: no clock, no I/O. A decision looks up one destination, then the
// caller's user id, each of its groups and "*": its cost grows with the caller's groups,
// never with the number of policies. Deny overrides permit; no matching permit is a deny.
import type { AuditSubject } from "../../contract/audit.ts";
import type { BundleIdentity, BundleModelProfile, BundlePolicy, BundleTool, PolicyBundle } from "../../contract/bundle.ts";
import { REFUSAL_CODES, type RefusalCode } from "../../contract/errors.ts";
import type { FrontendUser } from "../../contract/local-api.ts";
import { parseDestination, parseSource } from "../../contract/patterns.ts";

export const MODEL_ACTION = "model:invoke";

type SubjectRules = { users: Map<string, BundlePolicy>; groups: Map<string, BundlePolicy>; any: BundlePolicy | null };
type DestinationRules = { permit: SubjectRules; deny: SubjectRules };

export type CompiledBundle = {
  bundle: PolicyBundle;
  revision: number;
  tools: ReadonlyMap<string, BundleTool>;
  identities: ReadonlyMap<string, BundleIdentity>;
  rules: ReadonlyMap<string, DestinationRules>;
  /** Policies skipped because their src or dst does not parse (counted for the log). */
  skipped: number;
};

/** Who a call is decided for. */
export type Subject =
  | { kind: "user"; userId: string; remoteUserId: string; groups: readonly string[] }
  | { kind: "unlinked"; remoteUserId: string }
  | { kind: "installation"; installationId: string };

export type Decision = {
  decision: "permit" | "deny";
  /** Refusal code on deny; null on permit. */
  code: RefusalCode | null;
  /** "policy", "assignment" (v2 model calls) or the refusal code. */
  reason: string;
  policyId: string | null;
  /** The refusal text shown to the model or user (spec §7); null on permit. */
  message: string | null;
  subject: Subject;
  /** How many index entries the decision looked at (a scale check, not a policy count). */
  considered: number;
};

const emptyRules = (): SubjectRules => ({ users: new Map(), groups: new Map(), any: null });

export function indexBundle(bundle: PolicyBundle): CompiledBundle {
  const rules = new Map<string, DestinationRules>();
  let skipped = 0;
  for (const p of bundle.policies) {
    const src = parseSource(p.src);
    const dst = parseDestination(p.dst);
    if (!src.ok || !dst.ok) {
      skipped++;
      continue;
    }
    const key = dst.value.kind === "model" ? MODEL_ACTION : `tool:${dst.value.name}`;
    let d = rules.get(key);
    if (!d) rules.set(key, (d = { permit: emptyRules(), deny: emptyRules() }));
    const r = p.effect === "deny" ? d.deny : d.permit;
    // The first policy in bundle order names the decision; later duplicates add nothing.
    if (src.value.kind === "any") r.any ??= p;
    else if (src.value.kind === "user") {
      if (!r.users.has(src.value.id)) r.users.set(src.value.id, p);
    } else if (!r.groups.has(src.value.name)) r.groups.set(src.value.name, p);
  }
  return {
    bundle,
    revision: bundle.revision,
    tools: new Map(bundle.tools.map((t) => [t.name, t])),
    identities: new Map(bundle.identities.map((i) => [i.remote_user_id, i])),
    rules,
    skipped,
  };
}

/** The front-end user → linked service user, unlinked, or (no session user) the installation. */
export function resolveSubject(c: CompiledBundle, user: Pick<FrontendUser, "id"> | null): Subject {
  if (!user) return { kind: "installation", installationId: c.bundle.installation_id };
  const identity = c.identities.get(user.id);
  if (!identity) return { kind: "unlinked", remoteUserId: user.id };
  return { kind: "user", userId: identity.user_id, remoteUserId: user.id, groups: identity.groups };
}

/** The audit subject: the service user, or the installation subject marked via installation. */
export function auditSubject(s: Subject): AuditSubject {
  if (s.kind === "user") return { user_id: s.userId, remote_user_id: s.remoteUserId, via_installation: false };
  if (s.kind === "unlinked") return { user_id: null, remote_user_id: s.remoteUserId, via_installation: true };
  return { user_id: null, remote_user_id: null, via_installation: true };
}

function match(r: SubjectRules | undefined, s: Subject, count: { n: number }): BundlePolicy | null {
  if (!r) return null;
  // The installation subject is matched as `user:<installation id>` and by "*".
  const userId = s.kind === "user" ? s.userId : s.kind === "installation" ? s.installationId : null;
  if (userId !== null) {
    count.n++;
    const p = r.users.get(userId);
    if (p) return p;
  }
  if (s.kind === "user") {
    for (const g of s.groups) {
      count.n++;
      const p = r.groups.get(g);
      if (p) return p;
    }
  }
  count.n++;
  return r.any;
}

/**
 * The refusal text the model or user sees, exactly as spec §7 writes it: `tool_not_registered`,
 * `Refused (svc.denied): <why>` and `Refused (identity.unlinked)`. Only svc.denied carries a
 * reason (the spec's "..."); the other two are the bare text. The claim link never goes here.
 */
export function refusalMessage(code: RefusalCode, why = "no policy permits the call"): string {
  if (code === REFUSAL_CODES.denied) return `Refused (${code}): ${why}`;
  if (code === REFUSAL_CODES.unlinked) return `Refused (${code})`;
  return code;
}

function refuse(code: RefusalCode, why: string | undefined, subject: Subject, considered: number, policyId: string | null = null): Decision {
  return { decision: "deny", code, reason: code, policyId, message: refusalMessage(code, why), subject, considered };
}

/** Evaluate one action (`tool:<name>` or `model:invoke`) for a subject from the index. */
export function evaluate(c: CompiledBundle, action: string, subject: Subject): Decision {
  if (subject.kind === "unlinked") return refuse(REFUSAL_CODES.unlinked, undefined, subject, 0);
  const count = { n: 0 };
  const d = c.rules.get(action);
  const deny = match(d?.deny, subject, count);
  if (deny) return refuse(REFUSAL_CODES.denied, `policy "${deny.name}" denies ${action}`, subject, count.n, deny.id);
  const permit = match(d?.permit, subject, count);
  if (permit) return { decision: "permit", code: null, reason: "policy", policyId: permit.id, message: null, subject, considered: count.n };
  return refuse(REFUSAL_CODES.denied, `no policy permits ${action} for this user`, subject, count.n);
}

export function decideTool(c: CompiledBundle, user: Pick<FrontendUser, "id"> | null, tool: string): Decision {
  const subject = resolveSubject(c, user);
  if (!c.tools.has(tool)) {
    return refuse(REFUSAL_CODES.toolNotRegistered, undefined, subject, 0);
  }
  return evaluate(c, `tool:${tool}`, subject);
}

/** v1: `model:invoke` policies decide. v2: the agent's model-profile assignment decides (linked users). */
export function decideModel(c: CompiledBundle, user: Pick<FrontendUser, "id"> | null): Decision {
  const subject = resolveSubject(c, user);
  if (subject.kind === "unlinked") return refuse(REFUSAL_CODES.unlinked, undefined, subject, 0);
  if (!c.bundle.model_profile) return refuse(REFUSAL_CODES.denied, "no model profile is assigned to this agent", subject, 0);
  if (c.bundle.version === 1) return evaluate(c, MODEL_ACTION, subject);
  if (subject.kind === "installation") return refuse(REFUSAL_CODES.denied, "model calls need a linked chat user", subject, 0);
  return { decision: "permit", code: null, reason: "assignment", policyId: null, message: null, subject, considered: 0 };
}

/** The models the caller may see: the profile's, or none (no profile, or in v1 no permit). */
export function visibleModels(c: CompiledBundle, user: Pick<FrontendUser, "id"> | null): { profile: BundleModelProfile; models: string[] } | null {
  const profile = c.bundle.model_profile;
  if (!profile) return null;
  if (c.bundle.version === 1 && decideModel(c, user).decision !== "permit") return null;
  const models = profile.models.length > 0 ? profile.models : [profile.default_model];
  return { profile, models };
}
