// Policies: who (src) may do what (dst), permit or deny, bound to an agent or to every agent
// of a workspace. Deny overrides permit; with no matching permit the answer is deny.
import { and, eq, isNull, or } from "drizzle-orm";
import type { BundlePolicy, PolicyMode } from "../../contract/bundle.ts";
import { checkCondition, describeProblem } from "../../contract/conditions.ts";
import { SvcError } from "../../contract/errors.ts";
import { hasPrefix, newId } from "../../contract/ids.ts";
import { formatDestination, formatSource, parseDestination, parseSource, userIdProblem } from "../../contract/patterns.ts";
import { getAgentInWorkspace } from "../agents/service.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import { findUserById } from "../directory/service.ts";
import { findInstallation } from "../installations/service.ts";
import { bumpRevision } from "../organizations/service.ts";

/** The policies that apply to an agent: those bound to it and those bound to no agent in its workspace. */
export async function policiesForAgent(db: Db, workspaceId: string, agentId: string): Promise<BundlePolicy[]> {
  const p = tables(db).policies;
  return db
    .select({ id: p.id, name: p.name, src: p.src, dst: p.dst, effect: p.effect, condition: p.condition, mode: p.mode })
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
  return db.select().from(p).where(and(...conds)).orderBy(p.id);
}

function invalidPattern(path: "/src" | "/dst", message: string): never {
  throw new SvcError("invalid_pattern", message, { errors: [{ path, message }] });
}

/** The condition as stored: trimmed, null when absent; a type or syntax error is a 422 naming its position. */
export function validCondition(condition: string | null | undefined): string | null {
  if (condition === undefined || condition === null) return null;
  const problem = checkCondition(condition);
  if (!problem) return condition.trim();
  const message = `condition: ${describeProblem(problem)}`;
  throw new SvcError("invalid_condition", message, { errors: [{ path: "/condition", message, ...(problem.position ? { position: problem.position } : {}) }] });
}

/**
 * The subject of "user:<id>" exists: a service user of the organization, or an installation of
 * the policy's workspace (the subject of calls without a session user). A policy naming
 * anything else would be stored and never match.
 */
async function requireSubject(db: Db, orgId: string, workspaceId: string, src: string, id: string): Promise<void> {
  if (hasPrefix(id, "user")) {
    if (!(await findUserById(db, orgId, id))) invalidPattern("/src", `src-pattern "${src}": no service user ${id} in this organization; find it with \`svc users resolve --email <email>\``);
  } else {
    const installation = await findInstallation(db, orgId, id);
    if (installation?.workspaceId !== workspaceId) invalidPattern("/src", `src-pattern "${src}": no installation ${id} in this workspace; list them with \`svc bot list\``);
  }
}

/** Creates a policy; the agent check, the insert and the revision bump are one transaction. */
export async function createPolicy(
  db: Db,
  orgId: string,
  input: { name: string; src: string; dst: string; effect: "permit" | "deny"; workspace: { id: string; name: string }; agentId?: string; condition?: string | null; mode?: PolicyMode },
): Promise<PolicyRow> {
  const name = input.name.trim();
  if (!name) throw new SvcError("validation_failed", "the policy name is empty", { errors: [{ path: "/name", message: "empty" }] });
  const src = parseSource(input.src.trim());
  if (!src.ok) invalidPattern("/src", src.error);
  if (src.value.kind === "user") {
    const problem = userIdProblem(input.src.trim(), src.value.id);
    if (problem) invalidPattern("/src", problem);
  }
  const dst = parseDestination(input.dst.trim());
  if (!dst.ok) invalidPattern("/dst", dst.error);
  const condition = validCondition(input.condition);
  const id = newId("policy");
  return db.transaction(async (tx) => {
    if (input.agentId) await getAgentInWorkspace(tx, orgId, input.agentId, input.workspace);
    if (src.value.kind === "user") await requireSubject(tx, orgId, input.workspace.id, input.src.trim(), src.value.id);
    const [created] = await tx
      .insert(tables(tx).policies)
      .values({
        id,
        orgId,
        workspaceId: input.workspace.id,
        agentId: input.agentId ?? null,
        name,
        src: formatSource(src.value),
        dst: formatDestination(dst.value),
        effect: input.effect,
        condition,
        mode: input.mode ?? "enforce",
      })
      .returning();
    await bumpRevision(tx, orgId);
    return created!;
  });
}

export async function deletePolicy(db: Db, orgId: string, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    const p = tables(tx).policies;
    const gone = await tx.delete(p).where(and(eq(p.orgId, orgId), eq(p.id, id))).returning({ id: p.id });
    if (gone.length === 0) throw new SvcError("not_found", `policy ${id} not found in this organization`);
    await bumpRevision(tx, orgId);
  });
}
