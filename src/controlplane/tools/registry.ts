// The tool registry: each installation's registered tools, replaced wholesale by the boot tool
// sync (PUT /api/v1/runtime/tools, served by runtime/routes.ts). A tool name is unique per workspace: a name held by an
// admin or by another live installation is a 409 tool_conflict and nothing changes.
// Tools left behind by a deleted installation are released to whoever registers them next.
import { and, eq, inArray, isNull, ne, or } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import type { ManifestTool, ToolManifest, ToolSyncResult } from "../../contract/manifest.ts";
import type { ToolConflictMembers } from "../../contract/runtime-api.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { installationNames } from "../installations/lookup.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";
import { bumpRevision } from "../organizations/service.ts";

type Registered = { name: string; access: "read" | "write"; requiredCapabilities: string[]; toolkitId: string | null };

/** Capabilities as stored: trimmed, deduplicated, sorted — order in the pack does not matter. */
export function normalizeCapabilities(caps: readonly string[] | undefined): string[] {
  return [...new Set((caps ?? []).map((c) => c.trim()).filter(Boolean))].sort();
}

/** Names declared more than once in a manifest. */
export function duplicateNames(tools: readonly ManifestTool[]): string[] {
  const seen = new Set<string>();
  const dups = new Set<string>();
  for (const t of tools) (seen.has(t.name) ? dups : seen).add(t.name);
  return [...dups].sort();
}

/** The pure diff between what is registered and what the manifest declares. */
export function diffTools(current: readonly Registered[], wanted: readonly Registered[]) {
  const now = new Map(current.map((t) => [t.name, t]));
  const next = new Map(wanted.map((t) => [t.name, t]));
  const added: Registered[] = [];
  const updated: Registered[] = [];
  let unchanged = 0;
  for (const w of wanted) {
    const c = now.get(w.name);
    if (!c) added.push(w);
    else if (c.access !== w.access || c.toolkitId !== w.toolkitId || JSON.stringify(c.requiredCapabilities) !== JSON.stringify(w.requiredCapabilities)) updated.push(w);
    else unchanged++;
  }
  const removed = current.filter((c) => !next.has(c.name)).map((c) => c.name);
  return { added, updated, removed, unchanged };
}

/** Frees the tool names an installation registered (it was deleted). */
export async function releaseTools(db: Db, installationId: string): Promise<void> {
  const t = tables(db).tools;
  await db.delete(t).where(eq(t.installationId, installationId));
}

const CHUNK = 500;

type Holder = { installationId: string | null; installationName: string | null };

/** The 409 tool_conflict as the contract's ToolConflictProblem defines it (the boot tool sync reads it). */
export function toolConflict(name: string, holder: Holder, workspaceId: string): SvcError {
  const who = holder.installationId ? `installation ${holder.installationId} (${holder.installationName ?? "unnamed"})` : "an admin";
  const members: ToolConflictMembers = {
    tool: name,
    holder: holder.installationId ? { installation_id: holder.installationId, installation_name: holder.installationName } : { admin: true },
  };
  return new SvcError("tool_conflict", `tool "${name}" is already registered in workspace ${workspaceId} by ${who}; rename the tool in the pack or remove it there first`, members);
}

export async function syncTools(deps: ControlPlaneDeps, caller: RuntimeCaller, manifest: ToolManifest): Promise<ToolSyncResult> {
  const dups = duplicateNames(manifest.tools);
  if (dups.length) {
    throw new SvcError("validation_failed", `the manifest declares ${dups.map((d) => `"${d}"`).join(", ")} more than once; each tool name must be declared once`, {
      errors: dups.map((d) => ({ path: "/tools", message: `duplicate tool name "${d}"` })),
    });
  }
  const wanted: Registered[] = manifest.tools.map((m) => ({
    name: m.name,
    access: m.access,
    requiredCapabilities: normalizeCapabilities(m.required_capabilities),
    toolkitId: m.toolkit_id ?? null,
  }));
  const now = deps.now();

  return deps.db.transaction(async (tx) => {
    const t = tables(tx).tools;
    // Names in this workspace held by someone else: admins, live installations (conflict), or
    // deleted installations (released).
    const released: string[] = [];
    const names = wanted.map((w) => w.name);
    for (let k = 0; k < names.length; k += CHUNK) {
      const rows = await tx
        .select({ name: t.name, installationId: t.installationId })
        .from(t)
        .where(and(eq(t.workspaceId, caller.workspaceId), inArray(t.name, names.slice(k, k + CHUNK)), or(isNull(t.installationId), ne(t.installationId, caller.installationId))))
        .orderBy(t.name);
      const holders = await installationNames(
        tx,
        rows.flatMap((r) => (r.installationId === null ? [] : [r.installationId])),
      );
      const held = rows.map((r) => {
        const holder = r.installationId === null ? undefined : holders.get(r.installationId);
        return { ...r, installationName: holder?.name ?? null, deleted: holder?.deleted ?? false };
      });
      for (const h of held) {
        if (h.installationId !== null && h.deleted) {
          released.push(h.name);
          continue;
        }
        throw toolConflict(h.name, h, caller.workspaceId);
      }
    }
    for (let k = 0; k < released.length; k += CHUNK) {
      await tx.delete(t).where(and(eq(t.workspaceId, caller.workspaceId), inArray(t.name, released.slice(k, k + CHUNK))));
    }

    const current = await tx
      .select({ name: t.name, access: t.access, requiredCapabilities: t.requiredCapabilities, toolkitId: t.toolkitId })
      .from(t)
      .where(eq(t.installationId, caller.installationId));
    const diff = diffTools(current, wanted);

    for (let k = 0; k < diff.removed.length; k += CHUNK) {
      await tx.delete(t).where(and(eq(t.installationId, caller.installationId), inArray(t.name, diff.removed.slice(k, k + CHUNK))));
    }
    for (let k = 0; k < diff.added.length; k += CHUNK) {
      const rows = diff.added.slice(k, k + CHUNK).map((a) => ({
        workspaceId: caller.workspaceId,
        name: a.name,
        installationId: caller.installationId,
        access: a.access,
        requiredCapabilities: a.requiredCapabilities,
        toolkitId: a.toolkitId,
        updatedAt: now,
        createdAt: now,
      }));
      await tx.insert(t).values(rows);
    }
    for (const u of diff.updated) {
      await tx
        .update(t)
        .set({ access: u.access, requiredCapabilities: u.requiredCapabilities, toolkitId: u.toolkitId, updatedAt: now })
        .where(and(eq(t.workspaceId, caller.workspaceId), eq(t.name, u.name)));
    }
    if (diff.added.length || diff.updated.length || diff.removed.length) await bumpRevision(tx, caller.orgId);
    return { added: diff.added.length, removed: diff.removed.length, unchanged: diff.unchanged, updated: diff.updated.length, tool_count: wanted.length };
  });
}
