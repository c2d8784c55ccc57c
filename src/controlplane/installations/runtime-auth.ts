// Resolves a runtime bearer token to its installation. Only the current token's hash matches,
// so a rotated token fails at once; a deleted installation's token matches no live one, and
// `deletedInstallationOf` says which deleted installation it was (for an accurate refusal).
import { REPLICA_HEADER } from "../../contract/runtime-api.ts";
import { and, eq, isNotNull, isNull, sql } from "drizzle-orm";
import { hashSecret, isKind } from "../auth/tokens.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { revisionOf } from "../organizations/service.ts";

export type RuntimeCaller = {
  installationId: string;
  orgId: string;
  workspaceId: string;
  agentId: string;
  name: string;
  /** The replica named by the x-svc-replica header, when sent (every call after bootstrap). */
  replicaId: string | null;
  /**
   * The organization's policy revision, read with the token: a bundle poll answered 304 needs
   * nothing more (one query per poll instead of two; a round trip less on PostgreSQL).
   */
  orgRevision?: number;
};

// Every runtime call (every 304 poll included) starts here: the query is built once per
// database and only executed per call.
const prepared = new WeakMap<Db, ReturnType<typeof prepare>>();

function prepare(db: Db) {
  const i = tables(db).installations;
  return db
    .select({ id: i.id, orgId: i.orgId, workspaceId: i.workspaceId, agentId: i.agentId, name: i.name, revision: revisionOf(db, i.orgId) })
    .from(i)
    .where(and(eq(i.tokenHash, sql.placeholder("hash")), isNull(i.deletedAt)))
    .prepare("runtime_token");
}

export async function findInstallationByToken(deps: ControlPlaneDeps, token: string, headers: Record<string, string | undefined>): Promise<RuntimeCaller | null> {
  if (!isKind(token, "runtime")) return null;
  let query = prepared.get(deps.db);
  if (!query) prepared.set(deps.db, (query = prepare(deps.db)));
  const [row] = await query.execute({ hash: hashSecret(token) });
  if (!row) return null;
  return {
    installationId: row.id,
    orgId: row.orgId,
    workspaceId: row.workspaceId,
    agentId: row.agentId,
    name: row.name,
    replicaId: headers[REPLICA_HEADER] ?? null,
    orgRevision: row.revision,
  };
}

/** The deleted installation a runtime token belonged to, if any (the refusal names it; nothing else is trusted from it). */
export async function deletedInstallationOf(deps: ControlPlaneDeps, token: string): Promise<{ id: string; name: string; deletedAt: number } | null> {
  if (!isKind(token, "runtime")) return null;
  const i = tables(deps.db).installations;
  const [row] = await deps.db
    .select({ id: i.id, name: i.name, deletedAt: i.deletedAt })
    .from(i)
    .where(and(eq(i.tokenHash, hashSecret(token)), isNotNull(i.deletedAt)));
  return row && row.deletedAt !== null ? { id: row.id, name: row.name, deletedAt: row.deletedAt } : null;
}
