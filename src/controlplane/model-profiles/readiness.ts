// `svc model-profiles readiness`: can runtimes use this profile right now? The facts are
// gathered from storage, then judged by a pure function so every check's wording is tested
// without a database. The scope is the runtimes of the agents the profile is assigned to, or
// of the whole workspace while it is assigned to none; only live replicas count (stale and
// gone ones, not heard from for a while, are reported but do not make a profile unready).
// The key is sealed to credential-sync recipients, not to replica ids: a replica that
// bootstrapped again with a new key keeps its id but cannot open the key, so each live
// replica's current recipient must be among those the key was sealed to.
import { checkEndpoint } from "../../contract/model-endpoint.ts";
import type { Db } from "../db/index.ts";
import { type LivenessLimits, recipientsInScope, liveSince, toolServerReportsInScope } from "../installations/replicas.ts";
import { type ProfileRow, assignedAgentIds } from "./service.ts";

export type ReadinessCheck = { name: string; ok: boolean; detail: string };
export type Readiness = { ready: boolean; checks: ReadinessCheck[] };

export type ReadinessFacts = {
  endpoint: string;
  authType: "none" | "api_key";
  defaultModel: string;
  models: string[];
  hasKey: boolean;
  /** The credential-sync recipients the stored key was sealed to. */
  sealedRecipients: string[];
  assignedAgents: string[];
  /** The live replicas in scope and their current credential-sync recipients. */
  replicasInScope: Array<{ id: string; recipient: string }>;
  /** Replicas in scope not heard from for a while (stale or gone): not counted. */
  silentInScope: number;
  /** Each live replica's last attempt to reach this profile's endpoint, as its heartbeat reported it (issue 19). */
  endpointAttempts?: Array<{ replica: string; state: "ok" | "unreachable"; error: string | null; at: string }>;
};

/**
 * Whether a live runtime reached the endpoint at its last attempt: not ready when every live
 * runtime that tried failed (TLS, DNS, refused …), each named with its error; ok with a note
 * while none has tried yet. A runtime tries as soon as its bundle brings the profile (a
 * connection and a GET of the base URL, no model call: proxy/api/endpoint-probe.ts), and on
 * every model call, so "not tried" lasts one poll and a heartbeat.
 */
function endpointReached(f: ReadinessFacts): ReadinessCheck {
  const attempts = f.endpointAttempts ?? [];
  const reached = attempts.filter((a) => a.state === "ok");
  const failed = attempts.filter((a) => a.state !== "ok");
  const errors = failed.map((a) => `${a.replica} at ${a.at}: ${a.error ?? "unreachable"}`).join("; ");
  if (attempts.length === 0) {
    return { name: "endpoint_reached", ok: true, detail: "no live runtime has tried the endpoint yet (each connects to it when its next bundle brings this profile, within a poll interval)" };
  }
  if (reached.length === 0) {
    return { name: "endpoint_reached", ok: false, detail: `no live runtime could reach ${f.endpoint} at its last attempt: ${errors}` };
  }
  return {
    name: "endpoint_reached",
    ok: true,
    detail: `${reached.length} live runtime replica(s) reached the endpoint at their last attempt${failed.length ? `; ${failed.length} could not: ${errors}` : ""}`,
  };
}

export function judgeReadiness(f: ReadinessFacts): Readiness {
  const endpoint = checkEndpoint(f.endpoint);
  const scope = f.assignedAgents.length ? `the runtimes of ${f.assignedAgents.join(", ")}` : "the workspace's runtimes";
  const sealed = new Set(f.sealedRecipients);
  const missing = f.replicasInScope.filter((r) => !sealed.has(r.recipient)).map((r) => r.id);
  const live = f.replicasInScope.length;
  const silent = f.silentInScope ? ` (${f.silentInScope} stale or gone replica(s) not counted)` : "";
  const apiKey = f.authType === "api_key";
  const checks: ReadinessCheck[] = [
    { name: "endpoint_valid", ok: endpoint.ok, detail: endpoint.ok ? `${f.endpoint} is an https base URL` : endpoint.message },
    {
      name: "default_model_listed",
      ok: f.models.includes(f.defaultModel),
      detail: f.models.includes(f.defaultModel) ? `"${f.defaultModel}" is among ${f.models.length} model(s)` : `default model "${f.defaultModel}" is not in models`,
    },
    {
      name: "api_key_present",
      ok: !apiKey || f.hasKey,
      detail: !apiKey ? 'not needed (auth_type "none")' : f.hasKey ? "a sealed API key is stored" : "no API key stored; set one with PUT …/api-key",
    },
    {
      name: "key_sealed_to_runtimes",
      ok: !apiKey || (f.hasKey && missing.length === 0),
      detail: !apiKey
        ? 'not needed (auth_type "none")'
        : missing.length
          ? `the key is not sealed to the current credential-sync key of ${missing.join(", ")} (new runtimes, or runtimes that bootstrapped again with a new key); re-seal it to every runtime in scope (PUT …/api-key)`
          : `sealed to the current credential-sync keys of all ${live} live runtime replica(s) of ${scope}${silent}`,
    },
    {
      name: "assigned_to_agent",
      ok: f.assignedAgents.length > 0,
      detail: f.assignedAgents.length ? `assigned to ${f.assignedAgents.join(", ")}` : "not assigned to any agent; run `svc model-profiles assign`",
    },
    {
      name: "runtime_in_scope",
      ok: live > 0,
      detail: live
        ? `${live} live runtime replica(s) in ${scope}${silent}`
        : f.silentInScope
          ? `no runtime in ${scope} has been heard from lately${silent}; check that the containers run`
          : `no runtime has bootstrapped in ${scope} yet; deploy the image with the installation's token`,
    },
    endpointReached(f),
  ];
  return { ready: checks.every((c) => c.ok), checks };
}

export async function profileReadiness(db: Db, profile: ProfileRow, clock: { now: number; limits: LivenessLimits }): Promise<Readiness> {
  const assignedAgents = await assignedAgentIds(db, profile.id);
  const scopes = assignedAgents.length ? assignedAgents : [null];
  const since = liveSince(clock.now, clock.limits);
  const live = new Map<string, string>();
  const all = new Set<string>();
  const attempts = new Map<string, NonNullable<ReadinessFacts["endpointAttempts"]>[number]>();
  for (const agentId of scopes) {
    for (const r of await toolServerReportsInScope(db, profile.workspaceId, agentId, { liveSince: since })) {
      const a = (r.model_endpoints ?? []).find((m) => m.profile_id === profile.id);
      if (a) attempts.set(r.replica_id, { replica: r.replica_id, state: a.state, error: a.error, at: a.at });
    }
    for (const r of await recipientsInScope(db, profile.workspaceId, agentId, { liveSince: since })) live.set(r.replica_id, r.recipient);
    for (const r of await recipientsInScope(db, profile.workspaceId, agentId, { liveSince: null })) all.add(r.replica_id);
  }
  return judgeReadiness({
    endpoint: profile.endpoint,
    authType: profile.authType,
    defaultModel: profile.defaultModel,
    models: profile.models,
    hasKey: profile.apiKeySealed !== null,
    sealedRecipients: profile.sealedRecipients,
    assignedAgents,
    replicasInScope: [...live].map(([id, recipient]) => ({ id, recipient })).sort((a, b) => a.id.localeCompare(b.id)),
    silentInScope: all.size - live.size,
    endpointAttempts: [...attempts.values()].sort((a, b) => a.replica.localeCompare(b.replica)),
  });
}
