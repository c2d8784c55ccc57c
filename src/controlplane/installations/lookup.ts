// Installations as other folders read them (the tool registry's holders; this folder's replica
// queries): the installations table is this folder's, so they ask here instead of joining it
// themselves. Imports nothing but the store, so anything may sit on it (tools/ does, and
// service.ts uses tools/ in turn).
import { and, eq, inArray, isNull } from "drizzle-orm";
import { type Db, tables } from "../db/index.ts";

/** Ids of the workspace's installations not deleted, optionally of one agent. */
export async function liveInstallationIds(db: Db, workspaceId: string, agentId?: string | null): Promise<string[]> {
  const i = tables(db).installations;
  const conds = [eq(i.workspaceId, workspaceId), isNull(i.deletedAt)];
  if (agentId) conds.push(eq(i.agentId, agentId));
  return (
    await db
      .select({ id: i.id })
      .from(i)
      .where(and(...conds))
  ).map((r) => r.id);
}

/** Ids and names of the organization's installations not deleted. */
export async function orgInstallations(db: Db, orgId: string): Promise<{ id: string; name: string }[]> {
  const i = tables(db).installations;
  return db
    .select({ id: i.id, name: i.name })
    .from(i)
    .where(and(eq(i.orgId, orgId), isNull(i.deletedAt)))
    .orderBy(i.name);
}

/** Installation id → its name and whether it was deleted, for the given ids (unknown ids left out). */
export async function installationNames(db: Db, ids: readonly string[]): Promise<Map<string, { name: string; deleted: boolean }>> {
  if (ids.length === 0) return new Map();
  const i = tables(db).installations;
  const rows = await db
    .select({ id: i.id, name: i.name, deletedAt: i.deletedAt })
    .from(i)
    .where(inArray(i.id, [...new Set(ids)]));
  return new Map(rows.map((r) => [r.id, { name: r.name, deleted: r.deletedAt !== null }]));
}
