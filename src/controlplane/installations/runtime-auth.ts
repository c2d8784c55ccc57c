// Resolves a runtime bearer token to its installation. Only the current token's hash matches,
// so a rotated token fails at once; a deleted installation's token matches nothing.
import { REPLICA_HEADER } from "../../contract/runtime-api.ts";
import { hashSecret, isKind } from "../auth/tokens.ts";
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
  // Every runtime call (every 304 poll included) starts here: a statement bun:sqlite caches
  // per database costs a few µs where building the drizzle query costs tens.
  const row = deps.db.$client
    .query<{ id: string; orgId: string; workspaceId: string; agentId: string; name: string }, [string]>(
      "SELECT id, org_id AS orgId, workspace_id AS workspaceId, agent_id AS agentId, name FROM installations WHERE token_hash = ? AND deleted_at IS NULL",
    )
    .get(hashSecret(token));
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
