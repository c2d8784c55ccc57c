// Organizations and workspaces, and the organization's bundle revision. Its digest keys: digest-keys.ts.
import { type AnyColumn, type SQL, and, eq, getTableName, inArray, sql } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Db, rawStatements, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { type Acting, recordChange } from "../audit/admin-events.ts";
import { newDigestKey, storeDigestKey } from "./digest-keys.ts";

export { bumpRevision } from "./revision.ts";

export const DEFAULT_WORKSPACE = "default";

/** Creates an organization with a default workspace and a fresh KMS-wrapped digest key. */
export async function createOrganization(deps: ControlPlaneDeps, name: string) {
  const orgId = newId("organization");
  const workspaceId = newId("workspace");
  const digestKey = newDigestKey(deps, orgId);
  await deps.db.transaction(async (tx) => {
    const t = tables(tx);
    await tx.insert(t.organizations).values({ id: orgId, name });
    await tx.insert(t.workspaces).values({ id: workspaceId, orgId, name: DEFAULT_WORKSPACE });
    await storeDigestKey(tx, digestKey);
  });
  return { orgId, workspaceId };
}

/**
 * The organization's policy revision as a column expression (a scalar subquery on `orgId`), so a
 * query of another folder reads it in the same statement without reaching into this folder's
 * table: the runtime's token lookup, one query per 304 bundle poll.
 */
export function revisionOf(db: Db, orgId: AnyColumn): SQL<number> {
  const o = tables(db).organizations;
  return sql<number>`(select ${o.revision} from ${o} where ${o.id} = ${orgId})`.mapWith(Number);
}

/** Organization id → name, for the given ids (unknown ids are left out). */
export async function organizationNames(db: Db, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const o = tables(db).organizations;
  const rows = await db
    .select({ id: o.id, name: o.name })
    .from(o)
    .where(inArray(o.id, [...new Set(ids)]));
  return new Map(rows.map((r) => [r.id, r.name]));
}

export async function getOrganization(db: Db, orgId: string) {
  const o = tables(db).organizations;
  const [org] = await db.select().from(o).where(eq(o.id, orgId));
  if (!org) throw new SvcError("not_found", `organization ${orgId} not found`);
  return org;
}

export async function createWorkspace(db: Db, orgId: string, name: string, by: Acting) {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/.test(name)) {
    throw new SvcError("validation_failed", `workspace name "${name}" must be 1–63 letters, digits, "_", "." or "-"`);
  }
  const id = newId("workspace");
  return db.transaction(async (tx) => {
    // The (org, name) unique index decides between two concurrent creations of one name.
    const [created] = await tx.insert(tables(tx).workspaces).values({ id, orgId, name }).onConflictDoNothing().returning();
    if (!created) throw new SvcError("conflict", `workspace "${name}" already exists`);
    await recordChange(tx, by, { orgId, workspaceId: id, action: "workspace.create", target: { type: "workspace", id, name }, after: { id, name } });
    return created;
  });
}

export async function listWorkspaces(db: Db, orgId: string) {
  const w = tables(db).workspaces;
  return db.select().from(w).where(eq(w.orgId, orgId));
}

const revisionReads = new WeakMap<Db, (orgId: string) => Promise<number>>();

/**
 * `SELECT revision FROM organizations WHERE id = ?` written by hand on the store's own client:
 * every 304 bundle poll runs it, and drizzle's prepared query cost about as much as SQLite's
 * own lookup (docs/performance.md).
 */
function revisionRead(db: Db): (orgId: string) => Promise<number> {
  const o = tables(db).organizations;
  const raw = rawStatements(db);
  const text = `SELECT "${o.revision.name}" FROM "${getTableName(o)}" WHERE "${o.id.name}" = ${raw.dialect === "postgres" ? "$1" : "?"}`;
  return async (orgId) => {
    const [row] = await raw.rows(text, [orgId]);
    return row ? Number(row[0]) : 0;
  };
}

/** The organization's bundle revision (the ETag); 0 when there is no such organization. */
export async function orgRevision(db: Db, orgId: string): Promise<number> {
  let read = revisionReads.get(db);
  if (!read) revisionReads.set(db, (read = revisionRead(db)));
  return read(orgId);
}

/** A workspace by id (`ws_…`) or name, within the organization; 404 workspace_not_found otherwise. */
export async function resolveWorkspace(db: Db, orgId: string, idOrName: string) {
  const w = tables(db).workspaces;
  const [row] = await db
    .select()
    .from(w)
    .where(and(eq(w.orgId, orgId), idOrName.startsWith("ws_") ? eq(w.id, idOrName) : eq(w.name, idOrName)));
  if (!row) throw new SvcError("workspace_not_found", `workspace "${idOrName}" not found in this organization`);
  return row;
}
