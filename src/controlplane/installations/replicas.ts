// Runtime replicas: each proxy of an installation registers at bootstrap with its own id and
// credential-sync recipient, and reports its state by heartbeat. Several replicas may share
// one installation's token.
//
// Replicas never unregister (a pod that is replaced just stops calling), so each one's liveness
// is judged from when it was last heard from (bootstrap or heartbeat): live, stale after
// `replicaStaleAfterSeconds`, gone after `replicaGoneAfterSeconds`. Only live replicas count:
// they are the recipients an API key is sealed to (runtime-recipients) and the runtimes
// model-profile readiness checks; stale and gone ones are shown as such, not deleted.
import { and, eq, gte, inArray, or } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import type { HeartbeatModelEndpoint, HeartbeatToolServer } from "../../contract/runtime-api.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneConfig } from "../deps.ts";
import { liveInstallationIds } from "./lookup.ts";

export type Liveness = "live" | "stale" | "gone";
export type LivenessLimits = { staleAfterMs: number; goneAfterMs: number };

export function livenessLimits(config: Pick<ControlPlaneConfig, "replicaStaleAfterSeconds" | "replicaGoneAfterSeconds">): LivenessLimits {
  return { staleAfterMs: config.replicaStaleAfterSeconds * 1000, goneAfterMs: config.replicaGoneAfterSeconds * 1000 };
}

/** When the replica last called: its bootstrap or its latest heartbeat. */
export function lastSeen(r: { bootstrappedAt: number; lastHeartbeatAt: number | null }): number {
  return Math.max(r.bootstrappedAt, r.lastHeartbeatAt ?? 0);
}

export function replicaLiveness(r: { bootstrappedAt: number; lastHeartbeatAt: number | null }, now: number, limits: LivenessLimits): Liveness {
  const silent = now - lastSeen(r);
  if (silent > limits.goneAfterMs) return "gone";
  if (silent > limits.staleAfterMs) return "stale";
  return "live";
}

/** The earliest last-seen time of a live replica. */
export function liveSince(now: number, limits: LivenessLimits): number {
  return now - limits.staleAfterMs;
}

/** The release each replica of these installations reported, for those heard from since `since` (issue 29: skew). */
export async function runtimeVersions(db: Db, installationIds: readonly string[], since: number): Promise<{ installationId: string; replicaId: string; version: string | null; lastSeenAt: number }[]> {
  if (installationIds.length === 0) return [];
  const r = tables(db).runtimeReplicas;
  const rows = await db
    .select({ installationId: r.installationId, replicaId: r.id, version: r.version, bootstrappedAt: r.bootstrappedAt, lastHeartbeatAt: r.lastHeartbeatAt })
    .from(r)
    .where(and(inArray(r.installationId, [...installationIds]), or(gte(r.bootstrappedAt, since), gte(r.lastHeartbeatAt, since))));
  return rows.map((x) => ({ installationId: x.installationId, replicaId: x.replicaId, version: x.version, lastSeenAt: lastSeen(x) }));
}

export async function replicasOf(db: Db, installationId: string) {
  const r = tables(db).runtimeReplicas;
  return db.select().from(r).where(eq(r.installationId, installationId)).orderBy(r.id);
}

/**
 * Credential-sync recipients of the live replicas (heard from at `liveSince` or later) of the
 * live installations of an agent in a workspace; every replica, stale and gone included, with
 * `liveSince: null`.
 */
export async function recipientsInScope(db: Db, workspaceId: string, agentId: string | null | undefined, o: { liveSince: number | null }) {
  const r = tables(db).runtimeReplicas;
  const ids = await liveInstallationIds(db, workspaceId, agentId);
  if (ids.length === 0) return [];
  const conds = [inArray(r.installationId, ids)];
  if (o.liveSince !== null) conds.push(or(gte(r.bootstrappedAt, o.liveSince), gte(r.lastHeartbeatAt, o.liveSince))!);
  return db
    .select({ replica_id: r.id, installation_id: r.installationId, recipient: r.credentialSyncRecipient })
    .from(r)
    .where(and(...conds))
    .orderBy(r.id);
}

/**
 * The live replicas of an agent's (or the whole workspace's) live installations with the MCP
 * tool-server states their latest heartbeat reported (null: none reported). Issue 13.
 */
export async function toolServerReportsInScope(db: Db, workspaceId: string, agentId: string | null, o: { liveSince: number }) {
  const r = tables(db).runtimeReplicas;
  const ids = await liveInstallationIds(db, workspaceId, agentId);
  if (ids.length === 0) return [];
  return db
    .select({
      replica_id: r.id,
      installation_id: r.installationId,
      recipient: r.credentialSyncRecipient,
      tool_servers: r.toolServers,
      model_endpoints: r.modelEndpoints,
      last_heartbeat_at: r.lastHeartbeatAt,
    })
    .from(r)
    .where(and(inArray(r.installationId, ids), or(gte(r.bootstrappedAt, o.liveSince), gte(r.lastHeartbeatAt, o.liveSince))!))
    .orderBy(r.id);
}

/**
 * Registers a replica at bootstrap, or updates it when it bootstraps again (restart, new
 * version, new credential-sync key). A replica id already registered by another installation
 * is refused rather than taken over.
 */
export async function registerReplica(
  db: Db,
  installationId: string,
  input: { replicaId: string; credentialSyncRecipient: string; version: string; hostname: string | null; now: number },
): Promise<void> {
  const r = tables(db).runtimeReplicas;
  const res = await db
    .insert(r)
    .values({
      id: input.replicaId,
      installationId,
      credentialSyncRecipient: input.credentialSyncRecipient,
      version: input.version,
      hostname: input.hostname,
      state: "starting",
      bootstrappedAt: input.now,
    })
    .onConflictDoUpdate({
      target: r.id,
      set: { credentialSyncRecipient: input.credentialSyncRecipient, version: input.version, hostname: input.hostname, bootstrappedAt: input.now, state: "starting" },
      setWhere: eq(r.installationId, installationId),
    })
    .returning({ id: r.id });
  if (res.length === 0) {
    throw new SvcError("conflict", `replica id ${input.replicaId} belongs to another installation; delete the proxy's state directory so it generates a new one`);
  }
}

export type HeartbeatReport = {
  state: string;
  policyRevision: number | null;
  toolCount: number;
  spoolDepth: number;
  version: string;
  lastSuccess: string | null;
  /** The assigned MCP servers' state; absent from runtimes before issue 13 (stored as null). */
  toolServers?: HeartbeatToolServer[];
  /** The last attempt to reach each model endpoint; absent from runtimes before issue 19 (stored as null). */
  modelEndpoints?: HeartbeatModelEndpoint[];
  spoolState?: string | null;
  spoolFreeBytes?: number | null;
  /** Still indexing its spool's backlog (spool_depth a lower bound); null when it did not say. */
  spoolIndexing?: boolean | null;
  /** The replica's clock minus ours (ms) when the heartbeat arrived; null when it did not say. */
  clockSkewMs?: number | null;
};

/** The heartbeat's clock skew: the runtime's `sent_at` minus our clock, within a 32-bit column. */
export function clockSkewMs(sentAt: string | undefined, now: number): number | null {
  const at = sentAt === undefined ? Number.NaN : Date.parse(sentAt);
  if (!Number.isFinite(at)) return null;
  return Math.max(-2_147_483_648, Math.min(2_147_483_647, at - now));
}

/** Stores a replica's heartbeat; a replica that never bootstrapped (for this installation) is a 409. */
export async function recordHeartbeat(db: Db, installationId: string, replicaId: string, report: HeartbeatReport, now: number): Promise<void> {
  const r = tables(db).runtimeReplicas;
  const res = await db
    .update(r)
    .set({
      state: report.state,
      policyRevision: report.policyRevision,
      toolCount: report.toolCount,
      spoolDepth: report.spoolDepth,
      version: report.version,
      lastSuccess: report.lastSuccess,
      toolServers: report.toolServers ?? null,
      modelEndpoints: report.modelEndpoints ?? null,
      spoolState: report.spoolState ?? null,
      spoolFreeBytes: report.spoolFreeBytes ?? null,
      spoolIndexing: report.spoolIndexing ?? null,
      clockSkewMs: report.clockSkewMs ?? null,
      lastHeartbeatAt: now,
    })
    .where(and(eq(r.id, replicaId), eq(r.installationId, installationId)))
    .returning({ id: r.id });
  if (res.length === 0) {
    throw new SvcError("conflict", `replica ${replicaId} is not registered for this installation; bootstrap first (POST /api/v1/runtime/bootstrap)`);
  }
}
