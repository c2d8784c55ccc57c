// Installations: one deployed chat front end (platform `chatui`) bound to an agent in a
// workspace, its runtime credential (shown once, stored as SHA-256), its replicas' status and
// its registered tools. Deleting one makes its token fail at once and frees its tool names.
import { and, eq, isNull } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { getAgentInWorkspace } from "../agents/service.ts";
import { type Acting, recordChange, secretDigest } from "../audit/admin-events.ts";
import { hashSecret, newSecret } from "../auth/tokens.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { bumpRevision, resolveWorkspace } from "../organizations/service.ts";
import { type LivenessLimits, lastSeen, replicaLiveness, replicasOf } from "./replicas.ts";
import { toolCounts } from "../tools/lookup.ts";
import { releaseTools } from "../tools/registry.ts";

/** The only platform value (spec §1.2): front-end users resolve to (`chatui`, user id). */
export const PLATFORM = "chatui";

export type InstallationRow = Tables["installations"]["$inferSelect"];
type ReplicaRow = Awaited<ReturnType<typeof replicasOf>>[number];

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function presentInstallation(row: InstallationRow, toolCount: number) {
  return {
    id: row.id,
    name: row.name,
    platform: row.platform,
    agent_id: row.agentId,
    workspace_id: row.workspaceId,
    has_credential: row.tokenHash !== null,
    credential_issued_at: iso(row.tokenIssuedAt),
    tool_count: toolCount,
    created_at: iso(row.createdAt)!,
  };
}

/**
 * A replica as the status shows it. `state` is what it last reported, unless it has not been
 * heard from for a while: then `stale` or `gone` (`liveness`), its report in `reported_state`.
 */
export function presentReplica(r: ReplicaRow, now: number, limits: LivenessLimits) {
  const liveness = replicaLiveness(r, now, limits);
  return {
    id: r.id,
    state: liveness === "live" ? r.state : liveness,
    reported_state: r.state,
    liveness,
    last_seen_at: iso(lastSeen(r)),
    policy_revision: r.policyRevision,
    tool_count: r.toolCount,
    spool_depth: r.spoolDepth,
    /** ok, low or full (full: the replica refuses decisions); null before it reported one. */
    spool_state: r.spoolState,
    spool_free_bytes: r.spoolFreeBytes,
    /** True while the replica still indexed its spool's backlog: spool_depth counts only what it had indexed. */
    spool_indexing: r.spoolIndexing ?? false,
    /** The replica's clock minus the control plane's at its last heartbeat, ms (positive: ahead). */
    clock_skew_ms: r.clockSkewMs,
    /** The assigned MCP tool servers as its latest heartbeat reported them (issue 13); null when it reported none. */
    tool_servers: r.toolServers,
    version: r.version,
    hostname: r.hostname,
    bootstrapped_at: iso(r.bootstrappedAt),
    last_heartbeat_at: iso(r.lastHeartbeatAt),
    last_success: r.lastSuccess,
  };
}

export function platformProblem(platform: string): string | null {
  return platform === PLATFORM ? null : `platform must be exactly "${PLATFORM}" (the chat front end); got "${platform}"`;
}

/** A live (not deleted) installation of the organization, or undefined. */
export async function findInstallation(db: Db, orgId: string, id: string): Promise<InstallationRow | undefined> {
  const i = tables(db).installations;
  return (
    await db
      .select()
      .from(i)
      .where(and(eq(i.orgId, orgId), eq(i.id, id), isNull(i.deletedAt)))
  )[0];
}

/** A live (not deleted) installation of the organization; 404 otherwise. */
export async function getInstallation(db: Db, orgId: string, id: string): Promise<InstallationRow> {
  const row = await findInstallation(db, orgId, id);
  if (!row) throw new SvcError("not_found", `installation ${id} not found in this organization`);
  return row;
}

export async function toolCountOf(db: Db, installationId: string): Promise<number> {
  return (await toolCounts(db, [installationId])).get(installationId) ?? 0;
}

export async function listInstallations(db: Db, orgId: string, workspaceId?: string) {
  const i = tables(db).installations;
  const conds = [eq(i.orgId, orgId), isNull(i.deletedAt)];
  if (workspaceId) conds.push(eq(i.workspaceId, workspaceId));
  const rows = await db
    .select()
    .from(i)
    .where(and(...conds))
    .orderBy(i.id);
  const counts = await toolCounts(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => presentInstallation(r, counts.get(r.id) ?? 0));
}

const target = (row: InstallationRow) => ({ type: "installation", id: row.id, name: row.name });

export async function createInstallation(db: Db, orgId: string, input: { platform: string; name: string; agentId: string; workspace: string }, by: Acting) {
  const problem = platformProblem(input.platform);
  if (problem) throw new SvcError("invalid_platform", problem, { errors: [{ path: "/platform", message: problem }] });
  const name = input.name.trim();
  if (!name) throw new SvcError("validation_failed", "the installation name is empty", { errors: [{ path: "/name", message: "empty" }] });
  const row = await db.transaction(async (tx) => {
    const ws = await resolveWorkspace(tx, orgId, input.workspace);
    await getAgentInWorkspace(tx, orgId, input.agentId, ws);
    const i = tables(tx).installations;
    const [clash] = await tx
      .select({ id: i.id })
      .from(i)
      .where(and(eq(i.workspaceId, ws.id), eq(i.name, name), isNull(i.deletedAt)));
    if (clash) throw new SvcError("conflict", `an installation named "${name}" already exists in workspace "${ws.name}" (${clash.id})`);
    const [created] = await tx
      .insert(i)
      .values({ id: newId("installation"), orgId, workspaceId: ws.id, agentId: input.agentId, name, platform: PLATFORM })
      .returning();
    await recordChange(tx, by, { orgId, workspaceId: ws.id, action: "installation.create", target: target(created!), after: presentInstallation(created!, 0) });
    return created!;
  });
  return presentInstallation(row, 0);
}

/** The installation with its replicas as their heartbeats last reported them, and whether each is still heard from. */
export async function installationStatus(db: Db, orgId: string, id: string, clock: { now: number; limits: LivenessLimits }) {
  const row = await getInstallation(db, orgId, id);
  const replicas = await replicasOf(db, row.id);
  return { ...presentInstallation(row, await toolCountOf(db, row.id)), replicas: replicas.map((r) => presentReplica(r, clock.now, clock.limits)) };
}

/**
 * Issues the runtime token (`svc_rt_…`), returned once and stored only as SHA-256. With a
 * token already issued, only `rotate` replaces it; the old token then matches nothing.
 */
export async function issueCredential(deps: ControlPlaneDeps, orgId: string, id: string, rotate: boolean, by: Acting): Promise<{ token: string }> {
  return deps.db.transaction(async (tx) => {
    const row = await getInstallation(tx, orgId, id);
    if (row.tokenHash !== null && !rotate) {
      throw new SvcError("credential_already_issued", `installation ${id} already has a runtime token (issued ${iso(row.tokenIssuedAt)}); rotate it with \`svc bot credential --rotate\``);
    }
    const token = newSecret("runtime");
    const i = tables(tx).installations;
    await tx
      .update(i)
      .set({ tokenHash: hashSecret(token), tokenIssuedAt: deps.now() })
      .where(eq(i.id, row.id));
    // Ends the old token: a bundle poll trusts a token it checked while the revision stays (runtime/bundle-poll.ts).
    if (row.tokenHash !== null) await bumpRevision(tx, orgId);
    // The token only as a digest (the stored hash names the old one the same way).
    await recordChange(tx, by, {
      orgId,
      workspaceId: row.workspaceId,
      action: row.tokenHash === null ? "runtime_credential.issue" : "runtime_credential.rotate",
      target: target(row),
      before: { token: row.tokenHash === null ? null : `sha256:${row.tokenHash.slice(0, 16)}`, issued_at: iso(row.tokenIssuedAt) },
      after: { token: secretDigest(token), issued_at: iso(deps.now()) },
    });
    return { token };
  });
}

/**
 * Soft delete: the token stops working (runtime-auth.ts reads live installations only, and the
 * revision bump ends it for bundle polls too), the replicas' bundles go away, the tool names are
 * freed. The token's hash stays on the deleted row so a runtime still using it is told the
 * installation was deleted, not that its token is wrong (which a rotation cannot fix).
 */
export async function deleteInstallation(deps: ControlPlaneDeps, orgId: string, id: string, by: Acting): Promise<void> {
  await deps.db.transaction(async (tx) => {
    const row = await getInstallation(tx, orgId, id);
    const i = tables(tx).installations;
    const tools = await toolCountOf(tx, row.id);
    await tx.update(i).set({ deletedAt: deps.now() }).where(eq(i.id, row.id));
    await releaseTools(tx, row.id);
    await bumpRevision(tx, orgId);
    await recordChange(tx, by, { orgId, workspaceId: row.workspaceId, action: "installation.delete", target: target(row), before: presentInstallation(row, tools) });
  });
}
