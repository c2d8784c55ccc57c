// Policies as code (`svc policies apply`): a workspace's whole policy set, declared, becomes a
// plan (create, update, delete, matched by name) and then the change. The plan is pure; the
// apply is one transaction with one revision bump, so it is all-or-nothing: any refused policy
// (a bad pattern, an unknown agent or user, an unregistered tool under strict) leaves the set
// as it was. Applying the same file twice changes nothing the second time.
import { and, eq, inArray } from "drizzle-orm";
import type { PolicyApplyResult, PolicyPlan } from "../../contract/admin-policies.ts";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Acting, recordChange } from "../audit/admin-events.ts";
import { type Db, tables } from "../db/index.ts";
import { bumpRevision } from "../organizations/service.ts";
import { unregisteredTools } from "../tools/lookup.ts";
import { listedToolNames } from "../tool-servers/catalogue.ts";
import { type PolicyInput, type PolicyRow, type PolicySpec, policySpec, presentPolicy, requireReferences, specColumns } from "./service.ts";

type Stored = Pick<PolicyRow, "id" | "name" | "src" | "dst" | "effect" | "agentId" | "condition" | "mode">;
const FIELDS = ["src", "dst", "effect", "agentId", "condition", "mode"] as const;
const WIRE: Record<(typeof FIELDS)[number], string> = { src: "src", dst: "dst", effect: "effect", agentId: "agent_id", condition: "condition", mode: "mode" };

export type { PolicyPlan } from "../../contract/admin-policies.ts";

/** What turns `current` into `wanted`, matched by name. Pure. */
export function planPolicies(current: readonly Stored[], wanted: readonly PolicySpec[]): PolicyPlan {
  const byName = new Map(current.map((p) => [p.name, p]));
  const names = new Set(wanted.map((w) => w.name));
  const plan: PolicyPlan = { create: [], update: [], delete: [] };
  for (const w of wanted) {
    const have = byName.get(w.name);
    if (!have) {
      plan.create.push({ name: w.name });
      continue;
    }
    const changes = FIELDS.filter((f) => (have[f] ?? null) !== (w[f] ?? null)).map((f) => WIRE[f]);
    if (changes.length > 0) plan.update.push({ id: have.id, name: w.name, changes });
  }
  for (const p of current) if (!names.has(p.name)) plan.delete.push({ id: p.id, name: p.name });
  return plan;
}

/** The tool names the policies govern (`tool:<name>`). */
export function toolNames(specs: readonly Pick<PolicySpec, "dst">[]): string[] {
  return specs.flatMap((s) => (s.dst.startsWith("tool:") && !s.dst.endsWith(".*") ? [s.dst.slice(5)] : []));
}

/** One sentence per unregistered tool the policies name. */
export function toolWarnings(unregistered: readonly string[]): string[] {
  return unregistered.map(
    (t) => `tool "${t}" is not registered by any installation of this workspace yet: the policy decides nothing until a pack or tool server registers it (check the name with \`svc bot status\`)`,
  );
}

/** Refuses (422 unregistered_tool) under strict, else returns the warnings. */
export async function checkTools(db: Db, workspaceId: string, specs: readonly Pick<PolicySpec, "dst">[], strict: boolean): Promise<string[]> {
  const unregistered = await unregisteredTools(db, workspaceId, toolNames(specs));
  const listed = await listedToolNames(db, workspaceId, unregistered); // MCP tools the agents' runtimes listed
  const warnings = toolWarnings(unregistered.filter((n) => !listed.has(n)));
  if (strict && warnings.length > 0)
    throw new SvcError("unregistered_tool", `${warnings[0]}; without --strict this is only a warning`, { errors: warnings.map((message) => ({ path: "/dst", message })) });
  return warnings;
}

export type ApplyResult = PolicyApplyResult;

/**
 * Applies the set (a dry run changes nothing). A change is one admin event `policy.apply` whose
 * before holds the policies it updated or deleted as they were, and after those it created or
 * updated as they are.
 */
export async function applyPolicies(
  db: Db,
  orgId: string,
  workspace: { id: string; name: string },
  inputs: readonly PolicyInput[],
  opts: { dryRun: boolean; strict: boolean },
  by: Acting,
): Promise<ApplyResult> {
  const specs = inputs.map((p, i) => policySpec(p, `/policies/${i}`));
  const seen = new Map<string, number>();
  specs.forEach((s, i) => {
    const first = seen.get(s.name);
    if (first !== undefined)
      throw new SvcError("validation_failed", `policies ${first} and ${i} are both named "${s.name}": names identify policies in a file, so each must be unique`, {
        errors: [{ path: `/policies/${i}/name`, message: "duplicate name" }],
      });
    seen.set(s.name, i);
  });
  return db.transaction(async (tx) => {
    const p = tables(tx).policies;
    const current = await tx
      .select()
      .from(p)
      .where(and(eq(p.orgId, orgId), eq(p.workspaceId, workspace.id)))
      .orderBy(p.id);
    const dup = current.find((c, i) => current.findIndex((d) => d.name === c.name) !== i);
    if (dup) throw new SvcError("conflict", `workspace "${workspace.name}" has more than one policy named "${dup.name}"; rename or delete one (svc policies update|delete) before applying a file`);
    const warnings = await checkTools(tx, workspace.id, specs, opts.strict);
    const plan = planPolicies(current, specs);
    const changed = plan.create.length + plan.update.length + plan.delete.length > 0;
    if (opts.dryRun || !changed) return { plan, applied: false, warnings };
    const byName = new Map(current.map((c) => [c.name, c]));
    const touched = new Set([...plan.create.map((c) => c.name), ...plan.update.map((u) => u.name)]);
    const before: PolicyRow[] = [];
    const after: PolicyRow[] = [];
    for (const [i, spec] of specs.entries()) {
      if (!touched.has(spec.name)) continue;
      await requireReferences(tx, orgId, workspace, spec, `/policies/${i}`);
      const have = byName.get(spec.name);
      if (have) before.push(have);
      const [written] = have
        ? await tx.update(p).set(specColumns(spec, have)).where(eq(p.id, have.id)).returning()
        : await tx
            .insert(p)
            .values({ id: newId("policy"), orgId, workspaceId: workspace.id, ...specColumns(spec) })
            .returning();
      after.push(written!);
    }
    if (plan.delete.length > 0) {
      before.push(...plan.delete.map((d) => byName.get(d.name)!));
      await tx.delete(p).where(
        inArray(
          p.id,
          plan.delete.map((d) => d.id),
        ),
      );
    }
    await bumpRevision(tx, orgId);
    await recordChange(tx, by, {
      orgId,
      workspaceId: workspace.id,
      action: "policy.apply",
      target: { type: "workspace", id: workspace.id, name: workspace.name },
      before: { policies: before.map(presentPolicy) },
      after: { policies: after.map(presentPolicy), plan },
    });
    return { plan, applied: true, warnings };
  });
}
