// The tool registry as other folders read it: an installation's tools for its bundle, the
// packs' holders of names (issue 31), counts for the installation status, and the names a
// policy names that nobody registered. Reads only; the writes are registry.ts's.
import { and, count, eq, inArray } from "drizzle-orm";
import type { BundleTool } from "../../contract/bundle.ts";
import { type Db, tables } from "../db/index.ts";
import { installationNames } from "../installations/lookup.ts";

export async function toolsOfInstallation(db: Db, installationId: string): Promise<BundleTool[]> {
  const t = tables(db).tools;
  return db.select({ name: t.name, access: t.access, required_capabilities: t.requiredCapabilities }).from(t).where(eq(t.installationId, installationId)).orderBy(t.name);
}

/**
 * The installations whose packs registered any of these names in the workspace (issue 31: an
 * MCP tool of the same governed name is not served there, the pack's tool wins). Pure read.
 */
export async function packToolHolders(db: Db, workspaceId: string, names: readonly string[]): Promise<Map<string, string>> {
  if (names.length === 0) return new Map();
  const t = tables(db).tools;
  const rows = await db
    .select({ name: t.name, installationId: t.installationId })
    .from(t)
    .where(and(eq(t.workspaceId, workspaceId), inArray(t.name, [...names])));
  const held = rows.filter((r): r is { name: string; installationId: string } => r.installationId !== null);
  const live = await installationNames(
    db,
    held.map((r) => r.installationId),
  );
  return new Map(held.filter((r) => live.get(r.installationId)?.deleted === false).map((r) => [r.name, r.installationId]));
}

/** How many tools each installation has registered (installations without any are absent). */
export async function toolCounts(db: Db, installationIds: readonly string[]): Promise<Map<string, number>> {
  if (installationIds.length === 0) return new Map();
  const t = tables(db).tools;
  const rows = await db
    .select({ installationId: t.installationId, n: count() })
    .from(t)
    .where(inArray(t.installationId, [...installationIds]))
    .groupBy(t.installationId);
  return new Map(rows.map((r) => [r.installationId!, Number(r.n)]));
}

/** The names among these that no installation (or admin) has registered in the workspace. */
export async function unregisteredTools(db: Db, workspaceId: string, names: readonly string[]): Promise<string[]> {
  const wanted = [...new Set(names)];
  if (wanted.length === 0) return [];
  const t = tables(db).tools;
  const rows = await db
    .select({ name: t.name })
    .from(t)
    .where(and(eq(t.workspaceId, workspaceId), inArray(t.name, wanted)));
  const known = new Set(rows.map((r) => r.name));
  return wanted.filter((n) => !known.has(n)).sort();
}
