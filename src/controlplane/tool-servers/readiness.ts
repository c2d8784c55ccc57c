// `svc tool-servers readiness`: can the runtimes serve this server's tools right now? Facts are
// gathered from storage (the definition, its assignments, the live replicas in scope with what
// their latest heartbeat said about the server), then judged by a pure function so each
// check's wording is tested without a database. The scope is the runtimes of the agents the
// server is assigned to, or the whole workspace's while it is assigned to none. Only the runtime
// can reach the server: its heartbeat reports, per server, "ok" with a tool count or
// "unreachable" with why (an unreachable server serves no tools); a replica that has not
// reported the server yet (older runtime, or it has not polled the bundle since) is named so.
import { checkCommand, checkServerUrl } from "../../contract/tool-server.ts";
import type { HeartbeatToolServer } from "../../contract/runtime-api.ts";
import type { Db } from "../db/index.ts";
import { toolServerReportsInScope } from "../installations/replicas.ts";
import { skippedTools } from "./catalogue.ts";
import { type ServerRow, assignedAgentIds } from "./service.ts";

export type ReadinessCheck = { name: string; ok: boolean; detail: string };
/** One live replica's view of the server. */
export type RuntimeStatus = {
  replica_id: string;
  installation_id: string;
  state: "ok" | "unreachable" | "not_reported";
  error: string | null;
  tool_count: number | null;
  last_heartbeat_at: string | null;
};
export type SkippedTool = { tool: string; why: string; installation_id: string };
export type Readiness = { ready: boolean; checks: ReadinessCheck[]; runtimes: RuntimeStatus[]; skipped_tools: SkippedTool[] };

export type ReadinessFacts = {
  name: string;
  transport: "http" | "stdio";
  url: string | null;
  command: string | null;
  hasSecrets: boolean;
  sealedRecipients: string[];
  assignedAgents: string[];
  /** Live replicas in scope, their credential-sync recipient, and the server's entry in their latest heartbeat. */
  replicas: Array<{ id: string; installationId: string; recipient: string; reported: HeartbeatToolServer[] | null; lastHeartbeatAt: number | null }>;
  /** Tools the runtimes listed and cannot serve (a name listed twice, one too long), with why (issue 31). */
  skipped?: SkippedTool[];
};

function runtimeStatus(name: string, r: ReadinessFacts["replicas"][number]): RuntimeStatus {
  const entry = r.reported?.find((s) => s.name === name);
  return {
    replica_id: r.id,
    installation_id: r.installationId,
    state: entry ? entry.state : "not_reported",
    error: entry?.error ?? null,
    tool_count: entry ? entry.tool_count : null,
    last_heartbeat_at: r.lastHeartbeatAt === null ? null : new Date(r.lastHeartbeatAt).toISOString(),
  };
}

/** Every tool the server lists can be served; else each one that cannot, with why (issue 31: they used to vanish while readiness said ready). */
function toolsServable(skipped: readonly SkippedTool[]): ReadinessCheck {
  if (skipped.length === 0) return { name: "tools_servable", ok: true, detail: "every tool the runtimes listed can be served" };
  const names = [...new Map(skipped.map((s) => [s.tool, s.why])).entries()];
  return { name: "tools_servable", ok: false, detail: `${names.length} tool(s) the server lists are not served: ${names.map(([t, why]) => `"${t.slice(0, 100)}" (${why})`).join("; ")}` };
}

export function judgeReadiness(f: ReadinessFacts): Readiness {
  const endpoint = f.transport === "http" ? checkServerUrl(f.url ?? "") : checkCommand(f.command ?? "");
  const scope = f.assignedAgents.length ? `the runtimes of ${f.assignedAgents.join(", ")}` : "the workspace's runtimes";
  const sealed = new Set(f.sealedRecipients);
  const unsealed = f.replicas.filter((r) => !sealed.has(r.recipient)).map((r) => r.id);
  const runtimes = f.replicas.map((r) => runtimeStatus(f.name, r));
  const reached = runtimes.filter((r) => r.state === "ok");
  const unreachable = runtimes.filter((r) => r.state === "unreachable");
  const silent = runtimes.filter((r) => r.state === "not_reported");
  const live = f.replicas.length;
  const where = f.transport === "http" ? f.url : f.command;
  const checks: ReadinessCheck[] = [
    {
      name: "endpoint_valid",
      ok: endpoint.ok,
      detail: endpoint.ok ? (f.transport === "http" ? `${where} is an https URL` : `runs ${where} from the image`) : endpoint.message,
    },
    {
      name: "secrets_sealed_to_runtimes",
      ok: !f.hasSecrets || unsealed.length === 0,
      detail: !f.hasSecrets
        ? "no secrets"
        : unsealed.length
          ? `the secrets are not sealed to the current credential-sync key of ${unsealed.join(", ")}; seal them again with \`svc tool-servers secrets ${f.name}\``
          : `sealed to the current credential-sync keys of all ${live} live runtime replica(s) of ${scope}`,
    },
    {
      name: "assigned_to_agent",
      ok: f.assignedAgents.length > 0,
      detail: f.assignedAgents.length ? `assigned to ${f.assignedAgents.join(", ")}` : `not assigned to any agent; run \`svc tool-servers assign ${f.name} --agent <agent_id>\``,
    },
    {
      name: "runtime_in_scope",
      ok: live > 0,
      detail: live
        ? `${live} live runtime replica(s) in ${scope}`
        : `no runtime in ${scope} has been heard from lately; deploy the image with the installation's token, or check that the containers run`,
    },
    {
      name: "runtimes_reach_server",
      ok: live > 0 && reached.length === live,
      detail: !live
        ? "no live runtime to report it"
        : reached.length === live
          ? `every live replica reached it (${reached.map((r) => `${r.replica_id}: ${r.tool_count} tool(s)`).join(", ")})`
          : [
              unreachable.length ? `unreachable from ${unreachable.map((r) => `${r.replica_id} (${r.error ?? "no reason given"})`).join(", ")}, which serve none of its tools` : "",
              silent.length ? `not reported yet by ${silent.map((r) => r.replica_id).join(", ")} (assigned after their last bundle, or a runtime without MCP support)` : "",
            ]
              .filter(Boolean)
              .join("; "),
    },
    toolsServable(f.skipped ?? []),
  ];
  return { ready: checks.every((c) => c.ok), checks, runtimes, skipped_tools: f.skipped ?? [] };
}

export async function serverReadiness(db: Db, server: ServerRow, liveSince: number): Promise<Readiness> {
  const assignedAgents = await assignedAgentIds(db, server.id);
  const replicas = new Map<string, ReadinessFacts["replicas"][number]>();
  for (const agentId of assignedAgents.length ? assignedAgents : [null]) {
    for (const r of await toolServerReportsInScope(db, server.workspaceId, agentId, { liveSince })) {
      replicas.set(r.replica_id, { id: r.replica_id, installationId: r.installation_id, recipient: r.recipient, reported: r.tool_servers, lastHeartbeatAt: r.last_heartbeat_at });
    }
  }
  return judgeReadiness({
    name: server.name,
    transport: server.transport,
    url: server.url,
    command: server.command,
    hasSecrets: server.secretsSealed !== null,
    sealedRecipients: server.sealedRecipients,
    assignedAgents,
    replicas: [...replicas.values()].sort((a, b) => a.id.localeCompare(b.id)),
    skipped: await skippedTools(db, server),
  });
}
