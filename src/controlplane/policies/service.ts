// Policies: who (src) may do what (dst), permit or deny, bound to an agent or to every agent
// of a workspace. Deny overrides permit; with no matching permit the answer is deny.
import { and, eq, isNull, or } from "drizzle-orm";
import type { BundlePolicy, PolicyMode } from "../../contract/bundle.ts";
import { checkCondition, describeProblem } from "../../contract/conditions.ts";
import { SvcError } from "../../contract/errors.ts";
import { hasPrefix, newId } from "../../contract/ids.ts";
import { formatDestination, formatSource, parseDestination, parseSource, userIdProblem } from "../../contract/patterns.ts";
import { getAgentInWorkspace } from "../agents/service.ts";
import { type Acting, recordChange } from "../audit/admin-events.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import { findUserById } from "../directory/service.ts";
import { findInstallation } from "../installations/service.ts";
import { bumpRevision, resolveWorkspace } from "../organizations/service.ts";
import { POLICY_FEATURES, policyNeeds } from "../replicas/features.ts";

/** The policies that apply to an agent: those bound to it and those bound to no agent in its workspace. */
/** A policy as the bundle compiler takes it: with the features it needs (replicas/features.ts). */
export type PolicyForBundle = BundlePolicy & { requires: string[] };

export async function policiesForAgent(db: Db, workspaceId: string, agentId: string): Promise<PolicyForBundle[]> {
  const p = tables(db).policies;
  return db
    .select({ id: p.id, name: p.name, src: p.src, dst: p.dst, effect: p.effect, condition: p.condition, mode: p.mode, requires: p.requires })
    .from(p)
    .where(and(eq(p.workspaceId, workspaceId), or(eq(p.agentId, agentId), isNull(p.agentId))))
    .orderBy(p.id);
}

// ── admin API ──────────────────────────────────────────────────────────────────────────

export type PolicyRow = Tables["policies"]["$inferSelect"];

export function presentPolicy(p: PolicyRow) {
  return {
    id: p.id,
    name: p.name,
    src: p.src,
    dst: p.dst,
    effect: p.effect,
    condition: p.condition,
    mode: p.mode,
    agent_id: p.agentId,
    workspace_id: p.workspaceId,
    created_at: new Date(p.createdAt).toISOString(),
  };
}

/**
 * Policies of the organization, optionally of one workspace. With an agent, those that apply
 * to it: bound to it or to every agent of its workspace (agent_id null in the result).
 */
export async function listPolicies(db: Db, orgId: string, filter: { workspaceId?: string; agentId?: string }): Promise<PolicyRow[]> {
  const p = tables(db).policies;
  const conds = [eq(p.orgId, orgId)];
  if (filter.workspaceId) conds.push(eq(p.workspaceId, filter.workspaceId));
  if (filter.agentId) conds.push(or(eq(p.agentId, filter.agentId), isNull(p.agentId))!);
  return db
    .select()
    .from(p)
    .where(and(...conds))
    .orderBy(p.id);
}

function invalidPattern(path: string, message: string): never {
  throw new SvcError("invalid_pattern", message, { errors: [{ path, message }] });
}

/**
 * The condition as stored: trimmed, null when absent. A type or syntax error, or a pattern
 * RE2 cannot run, is a 422 invalid_condition naming its position; a condition whose cost
 * estimate is over the limit a 422 condition_too_costly with the estimate and its costliest part.
 */
export function validCondition(condition: string | null | undefined, at = ""): string | null {
  if (condition === undefined || condition === null || condition.trim() === "") return null;
  const problem = checkCondition(condition);
  if (!problem) return condition.trim();
  const message = `${at ? `${at.slice(1)}: ` : ""}condition: ${describeProblem(problem)}`;
  const error = { path: `${at}/condition`, message, ...(problem.position ? { position: problem.position } : {}) };
  if (problem.cost) throw new SvcError("condition_too_costly", message, { errors: [error], cost: problem.cost });
  throw new SvcError("invalid_condition", message, { errors: [error] });
}

/**
 * The subject of "user:<id>" exists: a service user of the organization, or an installation of
 * the policy's workspace (the subject of calls without a session user). A policy naming
 * anything else would be stored and never match.
 */
async function requireSubject(db: Db, orgId: string, workspaceId: string, src: string, id: string, at: string): Promise<void> {
  if (hasPrefix(id, "user")) {
    if (!(await findUserById(db, orgId, id))) invalidPattern(`${at}/src`, `src-pattern "${src}": no service user ${id} in this organization; find it with \`svc users resolve --email <email>\``);
  } else {
    const installation = await findInstallation(db, orgId, id);
    if (installation?.workspaceId !== workspaceId) invalidPattern(`${at}/src`, `src-pattern "${src}": no installation ${id} in this workspace; list them with \`svc bot list\``);
  }
}

export type PolicyInput = { name: string; src: string; dst: string; effect: "permit" | "deny"; agentId?: string | null; condition?: string | null; mode?: PolicyMode };

/** A policy as stored, checked and in canonical form (patterns formatted, condition trimmed). */
export type PolicySpec = { name: string; src: string; dst: string; effect: "permit" | "deny"; agentId: string | null; condition: string | null; mode: PolicyMode; userId: string | null };

/** Checks what needs no database; `at` prefixes error paths (`/policies/3` in an apply). */
export function policySpec(input: PolicyInput, at = ""): PolicySpec {
  const name = input.name.trim();
  if (!name) throw new SvcError("validation_failed", "the policy name is empty", { errors: [{ path: `${at}/name`, message: "empty" }] });
  const src = parseSource(input.src.trim());
  if (!src.ok) invalidPattern(`${at}/src`, src.error);
  if (src.value.kind === "user") {
    const problem = userIdProblem(input.src.trim(), src.value.id);
    if (problem) invalidPattern(`${at}/src`, problem);
  }
  const dst = parseDestination(input.dst.trim());
  if (!dst.ok) invalidPattern(`${at}/dst`, dst.error);
  return {
    name,
    src: formatSource(src.value),
    dst: formatDestination(dst.value),
    effect: input.effect,
    agentId: input.agentId ?? null,
    condition: validCondition(input.condition, at),
    mode: input.mode ?? "enforce",
    userId: src.value.kind === "user" ? src.value.id : null,
  };
}

/** Checks what the spec names (its agent, its user or installation); inside the writing transaction. */
export async function requireReferences(tx: Db, orgId: string, workspace: { id: string; name: string }, spec: PolicySpec, at = ""): Promise<void> {
  if (spec.agentId) await getAgentInWorkspace(tx, orgId, spec.agentId, workspace, `${at}/agent_id`.slice(1));
  if (spec.userId) await requireSubject(tx, orgId, workspace.id, spec.src, spec.userId, at);
}

/** The row's columns a spec sets. */
/**
 * A policy's columns from its spec. `requires` (issue 29): the features its fields need, and
 * those a later release stored for fields this release does not know (kept through an update
 * here, or this release would turn the policy into a wider one for every replica).
 */
export function specColumns(spec: PolicySpec, before?: { requires: readonly string[] }) {
  const foreign = (before?.requires ?? []).filter((f) => !(POLICY_FEATURES as readonly string[]).includes(f));
  return {
    agentId: spec.agentId,
    name: spec.name,
    src: spec.src,
    dst: spec.dst,
    effect: spec.effect,
    condition: spec.condition,
    mode: spec.mode,
    requires: policyNeeds({ ...spec, requires: foreign }),
  };
}

/** The target of a policy's admin events. */
export function policyTarget(p: Pick<PolicyRow, "id" | "name">) {
  return { type: "policy", id: p.id, name: p.name };
}

/** Creates a policy; the agent check, the insert, the revision bump and the event are one transaction. */
export async function createPolicy(db: Db, orgId: string, input: PolicyInput & { workspace: { id: string; name: string } }, by: Acting): Promise<PolicyRow> {
  const spec = policySpec(input);
  const id = newId("policy");
  return db.transaction(async (tx) => {
    await requireReferences(tx, orgId, input.workspace, spec);
    const [created] = await tx
      .insert(tables(tx).policies)
      .values({ id, orgId, workspaceId: input.workspace.id, ...specColumns(spec) })
      .returning();
    await bumpRevision(tx, orgId);
    await recordChange(tx, by, { orgId, workspaceId: input.workspace.id, action: "policy.create", target: policyTarget(created!), after: presentPolicy(created!) });
    return created!;
  });
}

/** Changes the fields given; the rest stay. Same checks as creation; one transaction with the revision bump. */
export async function updatePolicy(db: Db, orgId: string, id: string, change: Partial<PolicyInput>, by: Acting): Promise<PolicyRow> {
  return db.transaction(async (tx) => {
    const p = tables(tx).policies;
    const [row] = await tx
      .select()
      .from(p)
      .where(and(eq(p.orgId, orgId), eq(p.id, id)));
    if (!row) throw new SvcError("not_found", `policy ${id} not found in this organization`);
    const spec = policySpec({
      name: change.name ?? row.name,
      src: change.src ?? row.src,
      dst: change.dst ?? row.dst,
      effect: change.effect ?? row.effect,
      agentId: change.agentId !== undefined ? change.agentId : row.agentId,
      condition: change.condition !== undefined ? change.condition : row.condition,
      mode: change.mode ?? row.mode,
    });
    const workspace = await resolveWorkspace(tx, orgId, row.workspaceId);
    await requireReferences(tx, orgId, workspace, spec);
    const [updated] = await tx.update(p).set(specColumns(spec, row)).where(eq(p.id, id)).returning();
    await bumpRevision(tx, orgId);
    await recordChange(tx, by, { orgId, workspaceId: row.workspaceId, action: "policy.update", target: policyTarget(updated!), before: presentPolicy(row), after: presentPolicy(updated!) });
    return updated!;
  });
}

export async function deletePolicy(db: Db, orgId: string, id: string, by: Acting): Promise<void> {
  await db.transaction(async (tx) => {
    const p = tables(tx).policies;
    const [gone] = await tx
      .delete(p)
      .where(and(eq(p.orgId, orgId), eq(p.id, id)))
      .returning();
    if (!gone) throw new SvcError("not_found", `policy ${id} not found in this organization`);
    await bumpRevision(tx, orgId);
    await recordChange(tx, by, { orgId, workspaceId: gone.workspaceId, action: "policy.delete", target: policyTarget(gone), before: presentPolicy(gone) });
  });
}
