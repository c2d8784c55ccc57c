// GET /organizations/{org}/versions (issue 29): every release in play, for `svc version --all`
// and the console's overview, which warns while they differ.
import { Elysia } from "elysia";
import { Versions } from "../../contract/admin-api.ts";
import { BUILD_VERSION } from "../../version.ts";
import { authPlugin } from "../auth/plugin.ts";
import { cliClients } from "../auth/token-clients.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { orgInstallations } from "../installations/lookup.ts";
import { runtimeVersions } from "../installations/replicas.ts";
import { expressibleFeatures, liveReplicas } from "./service.ts";

/** Runtimes and CLIs count when heard from within this long. */
const RECENT_MS = 24 * 3600_000;

/** `0.2.0+3f2a…` → `0.2.0`; a version a client sent in another form stays as it is. Pure. */
export function releaseOf(version: string): string {
  return version.replace(/^svc-cli\//, "").split("+")[0]!;
}

export async function versions(deps: ControlPlaneDeps, orgId: string): Promise<Versions> {
  const now = deps.now();
  const iso = (ms: number) => new Date(ms).toISOString();
  const installs = await orgInstallations(deps.db, orgId);
  const names = new Map(installs.map((i) => [i.id, i.name]));
  const controlPlanes = await liveReplicas(deps.db, now, deps.replica?.id ?? null);
  const runtimes = (
    await runtimeVersions(
      deps.db,
      installs.map((i) => i.id),
      now - RECENT_MS,
    )
  ).map((r) => ({ installation_id: r.installationId, installation: names.get(r.installationId) ?? r.installationId, replica_id: r.replicaId, version: r.version, last_seen_at: iso(r.lastSeenAt) }));
  const clis = (await cliClients(deps.db, orgId, now - RECENT_MS)).map((c) => ({ token_id: c.tokenId, email: c.email, version: c.client.replace(/^svc-cli\//, ""), last_used_at: iso(c.lastUsedAt) }));
  const all = [BUILD_VERSION, ...controlPlanes.map((c) => c.version), ...runtimes.flatMap((r) => (r.version ? [r.version] : [])), ...clis.map((c) => c.version)];
  const releases = [...new Set(all.map(releaseOf))].sort();
  return {
    this: { version: BUILD_VERSION, schema: deps.replica?.schema ?? "" },
    control_planes: controlPlanes,
    runtimes,
    clis,
    releases,
    skew: releases.length > 1,
    policy_features: [...expressibleFeatures(deps).features],
  };
}

export function replicaRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "replica-routes", prefix: "/organizations/:org" }).use(authPlugin(deps)).get("/versions", async ({ principal }) => versions(deps, principal.orgId), {
    admin: true,
    response: Versions,
    detail: { summary: "The releases in play: control-plane replicas, runtimes and CLIs; skew when they differ", tags: ["system"] },
  });
}
