// `svc model-profiles readiness`: can runtimes use this profile right now? The facts are
// gathered from storage, then judged by a pure function so every check's wording is tested
// without a database. The scope is the runtimes of the agents the profile is assigned to, or
// of the whole workspace while it is assigned to none.
import { checkEndpoint } from "../../contract/model-endpoint.ts";
import type { Db } from "../db/index.ts";
import { recipientsInScope } from "../runtime/replicas.ts";
import { type ProfileRow, assignedAgentIds } from "./service.ts";

export type ReadinessCheck = { name: string; ok: boolean; detail: string };
export type Readiness = { ready: boolean; checks: ReadinessCheck[] };

export type ReadinessFacts = {
  endpoint: string;
  authType: "none" | "api_key";
  defaultModel: string;
  models: string[];
  hasKey: boolean;
  sealedTo: string[];
  assignedAgents: string[];
  replicasInScope: string[];
};

export function judgeReadiness(f: ReadinessFacts): Readiness {
  const endpoint = checkEndpoint(f.endpoint);
  const scope = f.assignedAgents.length ? `the runtimes of ${f.assignedAgents.join(", ")}` : "the workspace's runtimes";
  const missing = f.replicasInScope.filter((id) => !f.sealedTo.includes(id));
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
          ? `the key is not sealed to ${missing.join(", ")}; re-seal it to every runtime in scope (PUT …/api-key)`
          : `sealed to all ${f.replicasInScope.length} runtime replica(s) of ${scope}`,
    },
    {
      name: "assigned_to_agent",
      ok: f.assignedAgents.length > 0,
      detail: f.assignedAgents.length ? `assigned to ${f.assignedAgents.join(", ")}` : "not assigned to any agent; run `svc model-profiles assign`",
    },
    {
      name: "runtime_in_scope",
      ok: f.replicasInScope.length > 0,
      detail: f.replicasInScope.length
        ? `${f.replicasInScope.length} runtime replica(s) in ${scope}`
        : `no runtime has bootstrapped in ${scope} yet; deploy the image with the installation's token`,
    },
  ];
  return { ready: checks.every((c) => c.ok), checks };
}

export async function profileReadiness(db: Db, profile: ProfileRow): Promise<Readiness> {
  const assignedAgents = await assignedAgentIds(db, profile.id);
  const scopes = assignedAgents.length ? assignedAgents : [null];
  const replicas = new Set<string>();
  for (const agentId of scopes) {
    for (const r of await recipientsInScope(db, profile.workspaceId, agentId)) replicas.add(r.replica_id);
  }
  return judgeReadiness({
    endpoint: profile.endpoint,
    authType: profile.authType,
    defaultModel: profile.defaultModel,
    models: profile.models,
    hasKey: profile.apiKeySealed !== null,
    sealedTo: profile.sealedTo,
    assignedAgents,
    replicasInScope: [...replicas].sort(),
  });
}
