// The bundle compiled into a decision index (by destination, then subject) and the decisions
// made from it. Pure: no clock, no I/O. A decision looks up one destination, then the
// caller's user id, each of its groups and "*": its cost grows with the caller's groups and
// the policies naming that caller and action, never with the number of policies. Conditions
// (CEL, contract/conditions.ts) are compiled here once per bundle and run only for those
// candidates. Deny overrides permit; no matching permit is a deny.
import type { AuditSubject } from "../../contract/audit.ts";
import type { BundleIdentity, BundleModelProfile, BundlePolicy, BundleTool, PolicyBundle } from "../../contract/bundle.ts";
import { REFUSAL_CODES, type RefusalCode } from "../../contract/errors.ts";
import type { FrontendUser } from "../../contract/local-api.ts";
import { parseDestination, parseSource } from "../../contract/patterns.ts";
import { activation, type CompiledCondition, type ConditionActivation, type ConditionUser, compileCondition } from "../../contract/conditions.ts";

export const MODEL_ACTION = "model:invoke";

/** A policy as indexed: its condition compiled once per bundle (null: it always applies). */
type Rule = { policy: BundlePolicy; condition: CompiledCondition | null; shadow: boolean };
type SubjectRules = { users: Map<string, Rule[]>; groups: Map<string, Rule[]>; any: Rule[] };
type DestinationRules = { permit: SubjectRules; deny: SubjectRules; hasShadow: boolean };

export type CompiledBundle = {
  bundle: PolicyBundle;
  revision: number;
  tools: ReadonlyMap<string, BundleTool>;
  identities: ReadonlyMap<string, BundleIdentity>;
  rules: ReadonlyMap<string, DestinationRules>;
  /** `tool:<prefix>.*` policies by prefix (an MCP server's every tool): asked besides the exact action. */
  prefixRules: ReadonlyMap<string, DestinationRules>;
  /** Policies skipped because their src or dst does not parse (counted for the log). */
  skipped: number;
};

/** Who a call is decided for. */
export type Subject =
  | { kind: "user"; userId: string; remoteUserId: string; groups: readonly string[]; email?: string; attributes?: Readonly<Record<string, string>> }
  | { kind: "unlinked"; remoteUserId: string }
  | { kind: "installation"; installationId: string };

/** What conditions see of the call besides the caller: its arguments and the decision time. */
export type CallContext = { args: unknown; now: Date };

/** What the shadow policies would have decided (enforced and shadow policies together). */
export type ShadowDecision = { decision: "permit" | "deny"; policyId: string | null; reason: string };

export type Decision = {
  decision: "permit" | "deny";
  /** Refusal code on deny; null on permit. */
  code: RefusalCode | null;
  /** "policy", "assignment" (v2 model calls), "condition_error" or "condition_limit" (a condition refused), or the refusal code. */
  reason: string;
  policyId: string | null;
  /** The refusal text shown to the model or user (spec §7); null on permit. */
  message: string | null;
  subject: Subject;
  /** How many index entries the decision looked at (a scale check, not a policy count). */
  considered: number;
  /** Set when a shadow policy applied to the call: the decision they would have made. */
  shadow?: ShadowDecision;
};

const emptyRules = (): SubjectRules => ({ users: new Map(), groups: new Map(), any: [] });

function push(m: Map<string, Rule[]>, key: string, r: Rule): void {
  const list = m.get(key);
  if (list) list.push(r);
  else m.set(key, [r]);
}

export function indexBundle(bundle: PolicyBundle): CompiledBundle {
  const rules = new Map<string, DestinationRules>();
  const prefixRules = new Map<string, DestinationRules>();
  // One compilation per distinct condition text: many policies often share one.
  const compiled = new Map<string, CompiledCondition>();
  let skipped = 0;
  for (const p of bundle.policies) {
    const src = parseSource(p.src);
    const dst = parseDestination(p.dst);
    if (!src.ok || !dst.ok) {
      skipped++;
      continue;
    }
    const into = dst.value.kind === "tools" ? prefixRules : rules;
    const key = dst.value.kind === "model" ? MODEL_ACTION : dst.value.kind === "tools" ? dst.value.prefix : `tool:${dst.value.name}`;
    let d = into.get(key);
    if (!d) into.set(key, (d = { permit: emptyRules(), deny: emptyRules(), hasShadow: false }));
    let condition: CompiledCondition | null = null;
    if (p.condition) {
      condition = compiled.get(p.condition) ?? compileCondition(p.condition);
      compiled.set(p.condition, condition);
    }
    const rule: Rule = { policy: p, condition, shadow: p.mode === "shadow" };
    if (rule.shadow) d.hasShadow = true;
    const r = p.effect === "deny" ? d.deny : d.permit;
    if (src.value.kind === "any") r.any.push(rule);
    else if (src.value.kind === "user") push(r.users, src.value.id, rule);
    else push(r.groups, src.value.name, rule);
  }
  return {
    bundle,
    revision: bundle.revision,
    tools: new Map(bundle.tools.map((t) => [t.name, t])),
    identities: new Map(bundle.identities.map((i) => [i.remote_user_id, i])),
    rules,
    prefixRules,
    skipped,
  };
}

/** The front-end user → linked service user, unlinked, or (no session user) the installation. */
export function resolveSubject(c: CompiledBundle, user: Pick<FrontendUser, "id"> | null): Subject {
  if (!user) return { kind: "installation", installationId: c.bundle.installation_id };
  const identity = c.identities.get(user.id);
  if (!identity) return { kind: "unlinked", remoteUserId: user.id };
  return { kind: "user", userId: identity.user_id, remoteUserId: user.id, groups: identity.groups, email: identity.email, attributes: identity.attributes ?? {} };
}

/** The audit subject: the service user, or the installation subject marked via installation. */
export function auditSubject(s: Subject): AuditSubject {
  if (s.kind === "user") return { user_id: s.userId, remote_user_id: s.remoteUserId, via_installation: false };
  if (s.kind === "unlinked") return { user_id: null, remote_user_id: s.remoteUserId, via_installation: true };
  return { user_id: null, remote_user_id: null, via_installation: true };
}

/** The rules of one effect that name the subject: by user id, by each of its groups, by "*". */
function candidates(r: SubjectRules | undefined, s: Subject, count: { n: number }): Rule[] {
  if (!r) return [];
  const out: Rule[] = [];
  // The installation subject is matched as `user:<installation id>` and by "*".
  const userId = s.kind === "user" ? s.userId : s.kind === "installation" ? s.installationId : null;
  if (userId !== null) {
    count.n++;
    const list = r.users.get(userId);
    if (list) out.push(...list);
  }
  if (s.kind === "user") {
    for (const g of s.groups) {
      count.n++;
      const list = r.groups.get(g);
      if (list) out.push(...list);
    }
  }
  count.n++;
  out.push(...r.any);
  return out;
}

/** The caller as conditions see it. */
function conditionUser(s: Subject): ConditionUser {
  if (s.kind === "user") return { id: s.userId, email: s.email ?? "", groups: s.groups, attributes: s.attributes ?? {} };
  return { id: s.kind === "installation" ? s.installationId : "", email: "", groups: [], attributes: {} };
}

type Verdict = { kind: "match"; rule: Rule } | { kind: "error"; rule: Rule; error: string; limit: boolean } | null;

/** The first rule that applies; a condition that errors wins over any match (it refuses). */
function firstApplying(rules: Rule[], withShadow: boolean, vars: () => ConditionActivation): Verdict {
  let match: Verdict = null;
  for (const rule of rules) {
    if (rule.shadow && !withShadow) continue;
    if (!rule.condition) {
      match ??= { kind: "match", rule };
      continue;
    }
    const r = rule.condition(vars());
    if (!r.ok) return { kind: "error", rule, error: r.error, limit: r.limit === true };
    if (r.value) match ??= { kind: "match", rule };
  }
  return match;
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

/**
 * A condition that errors or is over svc's cost limit refuses the call, naming its policy; the
 * audit's reason tells the two apart (condition_error, condition_limit).
 */
function conditionFailed(v: Extract<Verdict, { kind: "error" }>, subject: Subject, considered: number): Decision {
  const name = v.rule.policy.name;
  const why = v.limit ? `policy "${name}" refused the call: its condition is over svc's cost limit (${v.error})` : `policy "${name}" could not evaluate its condition (${v.error})`;
  return { ...refuse(REFUSAL_CODES.denied, why, subject, considered, v.rule.policy.id), reason: v.limit ? "condition_limit" : "condition_error" };
}

/** The destination rules that apply to an action: its own, and for `tool:<prefix>.<method>` those of `tool:<prefix>.*`. */
type Destinations = readonly DestinationRules[];

function destinations(c: CompiledBundle, action: string): Destinations {
  const exact = c.rules.get(action);
  const dot = action.startsWith("tool:") ? action.indexOf(".") : -1;
  const prefix = dot > 0 && c.prefixRules.size > 0 ? c.prefixRules.get(action.slice(5, dot)) : undefined;
  return exact && prefix ? [exact, prefix] : exact ? [exact] : prefix ? [prefix] : [];
}

function allCandidates(ds: Destinations, effect: "permit" | "deny", s: Subject, count: { n: number }): Rule[] {
  if (ds.length === 1) return candidates(ds[0]![effect], s, count);
  return ds.flatMap((d) => candidates(d[effect], s, count));
}

function decideWith(ds: Destinations, action: string, subject: Subject, withShadow: boolean, vars: () => ConditionActivation, count: { n: number }): Decision {
  const denies = allCandidates(ds, "deny", subject, count);
  const deny = firstApplying(denies, withShadow, vars);
  if (deny?.kind === "error") return conditionFailed(deny, subject, count.n);
  if (deny) return refuse(REFUSAL_CODES.denied, `policy "${deny.rule.policy.name}" denies ${action}`, subject, count.n, deny.rule.policy.id);
  const permits = allCandidates(ds, "permit", subject, count);
  const permit = firstApplying(permits, withShadow, vars);
  if (permit?.kind === "error") return conditionFailed(permit, subject, count.n);
  if (permit) return { decision: "permit", code: null, reason: "policy", policyId: permit.rule.policy.id, message: null, subject, considered: count.n };
  return refuse(REFUSAL_CODES.denied, `no policy permits ${action} for this user`, subject, count.n);
}

/**
 * Evaluate one action (`tool:<name>` or `model:invoke`) for a subject from the index. Deny
 * overrides permit; a condition that errors refuses, naming its policy. Shadow policies never
 * change the answer: when one names the action, the decision they would give is in `shadow`.
 */
export function evaluate(c: CompiledBundle, action: string, subject: Subject, call: CallContext): Decision {
  if (subject.kind === "unlinked") return refuse(REFUSAL_CODES.unlinked, undefined, subject, 0);
  const count = { n: 0 };
  const ds = destinations(c, action);
  // The activation (arguments converted for CEL) is built at most once, and only when a condition runs.
  let activationOnce: ConditionActivation | null = null;
  const vars = () => (activationOnce ??= activation({ args: call.args, user: conditionUser(subject), now: call.now }));
  const enforced = decideWith(ds, action, subject, false, vars, count);
  if (!ds.some((d) => d.hasShadow)) return enforced;
  const would = decideWith(ds, action, subject, true, vars, { n: 0 });
  return { ...enforced, shadow: { decision: would.decision, policyId: would.policyId, reason: would.message ?? would.reason } };
}

export function decideTool(c: CompiledBundle, user: Pick<FrontendUser, "id"> | null, tool: string, call: CallContext): Decision {
  return decideToolFor(c, resolveSubject(c, user), tool, call);
}

/** The tool decision for a subject already resolved (what `svc policies test` asks for a service user). */
export function decideToolFor(c: CompiledBundle, subject: Subject, tool: string, call: CallContext): Decision {
  if (!c.tools.has(tool)) {
    return refuse(REFUSAL_CODES.toolNotRegistered, undefined, subject, 0);
  }
  return evaluate(c, `tool:${tool}`, subject, call);
}

/**
 * Whether some policy could permit the tool for this caller (issue 31): what `tools/list`
 * offers, since a listing has no arguments. A permit that names the caller lists the tool
 * whatever its condition; a deny hides it only when it has no condition (a conditional deny
 * refuses some calls, not the tool). Shadow policies never count. Every call is still decided
 * with its arguments (`decideTool`). Pure.
 */
export function couldPermitTool(c: CompiledBundle, user: Pick<FrontendUser, "id"> | null, tool: string): boolean {
  if (!c.tools.has(tool)) return false;
  const subject = resolveSubject(c, user);
  if (subject.kind === "unlinked") return false;
  const ds = destinations(c, `tool:${tool}`);
  const count = { n: 0 };
  const enforced = (r: Rule) => !r.shadow;
  if (allCandidates(ds, "deny", subject, count).some((r) => enforced(r) && !r.condition)) return false;
  return allCandidates(ds, "permit", subject, count).some(enforced);
}

/** v1: `model:invoke` policies decide. v2: the agent's model-profile assignment decides (linked users). */
export function decideModel(c: CompiledBundle, user: Pick<FrontendUser, "id"> | null, now: Date): Decision {
  const subject = resolveSubject(c, user);
  if (subject.kind === "unlinked") return refuse(REFUSAL_CODES.unlinked, undefined, subject, 0);
  if (!c.bundle.model_profile) return refuse(REFUSAL_CODES.denied, "no model profile is assigned to this agent", subject, 0);
  if (c.bundle.version === 1) return evaluate(c, MODEL_ACTION, subject, { args: {}, now });
  if (subject.kind === "installation") return refuse(REFUSAL_CODES.denied, "model calls need a linked chat user", subject, 0);
  return { decision: "permit", code: null, reason: "assignment", policyId: null, message: null, subject, considered: 0 };
}

/**
 * The models the caller may see: the profile's, or none (spec §7 "model list empty": no
 * profile, in v1 no permit, and in both versions a front-end user who is not linked, whose
 * model calls are refused). Without a user (the Pipe's listing, which Open WebUI makes for
 * everyone at once) v2 lists the assigned profile's models: the assignment decides.
 */
export function visibleModels(c: CompiledBundle, user: Pick<FrontendUser, "id"> | null, now: Date): { profile: BundleModelProfile; models: string[] } | null {
  const profile = c.bundle.model_profile;
  if (!profile) return null;
  if (user && resolveSubject(c, user).kind === "unlinked") return null;
  if (c.bundle.version === 1 && decideModel(c, user, now).decision !== "permit") return null;
  const models = profile.models.length > 0 ? profile.models : [profile.default_model];
  return { profile, models };
}
