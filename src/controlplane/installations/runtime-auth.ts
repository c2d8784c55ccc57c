// Resolves a runtime bearer token to its installation. Only the current token's hash matches,
// so a rotated token fails at once; a deleted installation's token matches nothing.
import { and, eq, isNull } from "drizzle-orm";
import { REPLICA_HEADER } from "../../contract/runtime-api.ts";
import { hashSecret, isKind } from "../auth/tokens.ts";
import { schema } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";

export type RuntimeCaller = {
  installationId: string;
  orgId: string;
  workspaceId: string;
  agentId: string;
  name: string;
  /** The replica named by the x-svc-replica header, when sent (every call after bootstrap). */
  replicaId: string | null;
};

export function findInstallationByToken(
  deps: ControlPlaneDeps,
  token: string,
  headers: Record<string, string | undefined>,
): RuntimeCaller | null {
  if (!isKind(token, "runtime")) return null;
  const i = schema.installations;
  const row = deps.db
    .select({ id: i.id, orgId: i.orgId, workspaceId: i.workspaceId, agentId: i.agentId, name: i.name })
    .from(i)
    .where(and(eq(i.tokenHash, hashSecret(token)), isNull(i.deletedAt)))
    .get();
  if (!row) return null;
  return {
    installationId: row.id,
    orgId: row.orgId,
    workspaceId: row.workspaceId,
    agentId: row.agentId,
    name: row.name,
    replicaId: headers[REPLICA_HEADER] ?? null,
  };
}
