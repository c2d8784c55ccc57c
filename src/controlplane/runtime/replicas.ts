// Runtime replicas: each proxy of an installation registers at bootstrap with its own id and
// credential-sync recipient, and reports its state by heartbeat. Several replicas may share
// one installation's token.
import { and, eq, inArray, isNull } from "drizzle-orm";
import { type Db, schema } from "../db/index.ts";

export function replicasOf(db: Db, installationId: string) {
  return db.select().from(schema.runtimeReplicas).where(eq(schema.runtimeReplicas.installationId, installationId)).orderBy(schema.runtimeReplicas.id).all();
}

/** Credential-sync recipients of every replica of the live installations of an agent in a workspace. */
export function recipientsInScope(db: Db, workspaceId: string, agentId?: string | null) {
  const i = schema.installations;
  const r = schema.runtimeReplicas;
  const conds = [eq(i.workspaceId, workspaceId), isNull(i.deletedAt)];
  if (agentId) conds.push(eq(i.agentId, agentId));
  return db
    .select({ replica_id: r.id, installation_id: i.id, recipient: r.credentialSyncRecipient })
    .from(r)
    .innerJoin(i, eq(i.id, r.installationId))
    .where(and(...conds))
    .orderBy(r.id)
    .all();
}

export function replicasByIds(db: Db, ids: string[]) {
  if (ids.length === 0) return [];
  return db.select().from(schema.runtimeReplicas).where(inArray(schema.runtimeReplicas.id, ids)).all();
}
