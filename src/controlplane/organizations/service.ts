// Organizations and workspaces, the organization's bundle revision, and its digest key.
import { randomBytes } from "node:crypto";
import { and, eq, sql } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Db, schema } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";

export const DEFAULT_WORKSPACE = "default";

/** Creates an organization with a default workspace and a fresh KMS-wrapped digest key. */
export function createOrganization(deps: ControlPlaneDeps, name: string) {
  const orgId = newId("organization");
  const workspaceId = newId("workspace");
  const digestKeyId = newId("digestKey");
  deps.db.transaction((tx) => {
    tx.insert(schema.organizations).values({ id: orgId, name }).run();
    tx.insert(schema.workspaces).values({ id: workspaceId, orgId, name: DEFAULT_WORKSPACE }).run();
    tx.insert(schema.digestKeys)
      .values({ id: digestKeyId, orgId, wrapped: deps.kms.wrap(randomBytes(32), digestKeyContext(orgId, digestKeyId)) })
      .run();
  });
  return { orgId, workspaceId };
}

export function getOrganization(db: Db, orgId: string) {
  const org = db.select().from(schema.organizations).where(eq(schema.organizations.id, orgId)).get();
  if (!org) throw new SvcError("not_found", `organization ${orgId} not found`);
  return org;
}

/**
 * Marks every policy bundle of the organization as changed. Call it in the same transaction as
 * any write that can change a bundle (policies, tools, identities, groups, profiles,
 * assignments, audit keys, escrow): the revision is the bundle's ETag.
 */
export function bumpRevision(db: Pick<Db, "update">, orgId: string): void {
  db.update(schema.organizations)
    .set({ revision: sql`${schema.organizations.revision} + 1` })
    .where(eq(schema.organizations.id, orgId))
    .run();
}

export function createWorkspace(db: Db, orgId: string, name: string) {
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/.test(name)) {
    throw new SvcError("validation_failed", `workspace name "${name}" must be 1–63 letters, digits, "_", "." or "-"`);
  }
  const existing = db
    .select()
    .from(schema.workspaces)
    .where(and(eq(schema.workspaces.orgId, orgId), eq(schema.workspaces.name, name)))
    .get();
  if (existing) throw new SvcError("conflict", `workspace "${name}" already exists`);
  const id = newId("workspace");
  db.insert(schema.workspaces).values({ id, orgId, name }).run();
  return db.select().from(schema.workspaces).where(eq(schema.workspaces.id, id)).get()!;
}

export function listWorkspaces(db: Db, orgId: string) {
  return db.select().from(schema.workspaces).where(eq(schema.workspaces.orgId, orgId)).all();
}

/** A workspace by id (`ws_…`) or name, within the organization; 404 workspace_not_found otherwise. */
export function resolveWorkspace(db: Db, orgId: string, idOrName: string) {
  const w = schema.workspaces;
  const row = db
    .select()
    .from(w)
    .where(and(eq(w.orgId, orgId), idOrName.startsWith("ws_") ? eq(w.id, idOrName) : eq(w.name, idOrName)))
    .get();
  if (!row) throw new SvcError("workspace_not_found", `workspace "${idOrName}" not found in this organization`);
  return row;
}

export function digestKeyContext(orgId: string, keyId: string): string {
  return `digest-key:${orgId}:${keyId}`;
}

/** The organization's current digest key, unwrapped: handed to its runtimes at bootstrap. */
export function currentDigestKey(deps: ControlPlaneDeps, orgId: string): { id: string; key: Uint8Array } {
  const row = deps.db
    .select()
    .from(schema.digestKeys)
    .where(eq(schema.digestKeys.orgId, orgId))
    .orderBy(sql`${schema.digestKeys.id} desc`)
    .get();
  if (!row) throw new SvcError("internal", `organization ${orgId} has no digest key`);
  return { id: row.id, key: deps.kms.unwrap(row.wrapped, digestKeyContext(orgId, row.id)) };
}
