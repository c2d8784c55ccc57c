// The control plane's replicas (issue 29): registration at start, a heartbeat, and what the
// others can express. A replica not heard from for LIVE_MS is left out (crashed or stopped);
// rows are kept for a day so an operator can see a rolling upgrade's history.
import { hostname } from "node:os";
import { gte, lt } from "drizzle-orm";
import { newId } from "../../contract/ids.ts";
import { BUILD_VERSION } from "../../version.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { POLICY_FEATURES, commonFeatures } from "./features.ts";

/** A replica is live while heard from within this long (it beats every BEAT_MS). */
export const LIVE_MS = 2 * 60_000;
export const BEAT_MS = 30_000;
const KEEP_MS = 24 * 3600_000;

export type ReplicaView = { id: string; version: string; schema: string; policy_features: string[]; hostname: string; started_at: string; last_seen_at: string; self: boolean };

/** This process's replica: what it registered as. */
import type { SelfReplica } from "./self.ts";

export type { SelfReplica } from "./self.ts";

export function selfReplica(schema: string, over: Partial<SelfReplica> = {}): SelfReplica {
  return { id: newId("controlplaneReplica"), version: BUILD_VERSION, schema, policyFeatures: [...POLICY_FEATURES], ...over };
}

/** Registers (or re-registers) this replica and forgets replicas silent for a day. */
export async function beat(db: Db, self: SelfReplica, now: number): Promise<void> {
  const r = tables(db).controlplaneReplicas;
  await db
    .insert(r)
    .values({ id: self.id, version: self.version, schema: self.schema, policyFeatures: self.policyFeatures, hostname: hostname().slice(0, 255), startedAt: now, lastSeenAt: now })
    .onConflictDoUpdate({ target: r.id, set: { lastSeenAt: now } });
  await db.delete(r).where(lt(r.lastSeenAt, now - KEEP_MS));
}

export async function liveReplicas(db: Db, now: number, selfId: string | null): Promise<ReplicaView[]> {
  const r = tables(db).controlplaneReplicas;
  const rows = await db
    .select()
    .from(r)
    .where(gte(r.lastSeenAt, now - LIVE_MS))
    .orderBy(r.startedAt);
  const iso = (ms: number) => new Date(ms).toISOString();
  return rows.map((x) => ({
    id: x.id,
    version: x.version,
    schema: x.schema,
    policy_features: x.policyFeatures,
    hostname: x.hostname,
    started_at: iso(x.startedAt),
    last_seen_at: iso(x.lastSeenAt),
    self: x.id === selfId,
  }));
}

/**
 * What bundles may express, per app (deps): refreshed from the live replicas by each beat, read
 * by every bundle compilation and 304 without touching the store. `key` names the set, so an
 * ETag remembered under another set is not answered 304 (bundle/served-etags.ts).
 */
type Expressible = { features: ReadonlySet<string>; key: string };
const expressibleByDeps = new WeakMap<object, Expressible>();

function expressibleOf(features: Iterable<string>): Expressible {
  const sorted = [...features].sort();
  return { features: new Set(sorted), key: sorted.join(",") };
}

/** The policy features a bundle may carry now: this release's, narrowed by every other live replica's. */
export function expressibleFeatures(deps: ControlPlaneDeps): Expressible {
  return expressibleByDeps.get(deps) ?? expressibleOf(deps.replica?.policyFeatures ?? POLICY_FEATURES);
}

/** Reads the live replicas and sets what bundles may express (each beat; tests call it directly). */
export async function refreshExpressible(deps: ControlPlaneDeps): Promise<Expressible> {
  const selfId = deps.replica?.id ?? null;
  const others = (await liveReplicas(deps.db, deps.now(), selfId)).filter((r) => !r.self).map((r) => r.policy_features);
  const e = expressibleOf(commonFeatures(deps.replica?.policyFeatures ?? POLICY_FEATURES, others));
  const before = expressibleByDeps.get(deps);
  if (before && before.key !== e.key) deps.log.info("policy features every control-plane replica can express changed", { from: before.key, to: e.key });
  expressibleByDeps.set(deps, e);
  return e;
}

/** Registers now (and reads the others), then every BEAT_MS; returns the stop function. Await `ready` before serving. */
export function startReplicaHeartbeat(deps: ControlPlaneDeps & { replica: SelfReplica }): { ready: Promise<void>; stop: () => Promise<void> } {
  let stopped = false;
  let running: Promise<void> | null = null;
  const tick = () => {
    if (stopped || running) return;
    running = beat(deps.db, deps.replica, deps.now())
      .then(async () => void (await refreshExpressible(deps)))
      .catch((e: unknown) => deps.log.warn("control-plane replica heartbeat failed", { error: (e as Error).message }))
      .finally(() => {
        running = null;
      });
  };
  tick();
  const ready = running ?? Promise.resolve();
  const timer = setInterval(tick, BEAT_MS);
  return {
    ready,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
