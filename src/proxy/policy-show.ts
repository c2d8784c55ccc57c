// `svc policy show`: what the running proxy decides on — GET /v1/policy over its unix socket
// (SVC_RUNTIME_SOCKET_PATH, bearer SVC_RUNTIME_TOKEN). Exit 1 with one clear sentence when
// the proxy is not running or refuses.
import { command } from "../command/index.ts";
import type { PolicyStatus } from "../contract/local-api.ts";
import { callProxy } from "./local-call.ts";
import { formatBytes } from "./audit/spool-space.ts";

export async function fetchPolicyStatus(env: Record<string, string | undefined>): Promise<PolicyStatus> {
  return (await (await callProxy(env, "svc policy show", "GET", "/v1/policy")).json()) as PolicyStatus;
}

export function formatPolicyStatus(s: PolicyStatus): string {
  const rows: [string, string][] = [
    ["tool_count", String(s.tool_count)],
    ["state", s.state],
    // Right under the state, so "stale" is never read as fine: decisions run on the last good bundle.
    ...(s.reason ? ([["reason", s.reason]] as [string, string][]) : []),
    ["policy_revision", s.policy_revision === null ? "-" : String(s.policy_revision)],
    ["last_success", s.last_success ?? "never"],
  ];
  if (s.bundle_version !== undefined) rows.push(["bundle_version", String(s.bundle_version)]);
  if (s.spool_depth !== undefined) rows.push(["spool_depth", s.spool_indexing ? `at least ${s.spool_depth} (still indexing the backlog of earlier runs)` : String(s.spool_depth)]);
  if (s.spool)
    rows.push(["spool", `${s.spool.state} (${formatBytes(s.spool.free_bytes)} free at ${s.spool.path}${s.spool.state === "ok" ? "" : `; warns below ${formatBytes(s.spool.low_space_bytes)}`})`]);
  if (s.last_error) rows.push(["last_error", s.last_error]);
  // Each MCP server: its tools, or that it serves none and why (issue 13).
  for (const t of s.tool_servers ?? []) rows.push([`mcp ${t.name}`, t.state === "ok" ? `ok, ${t.tool_count} tool(s)` : `unreachable, serves no tools: ${t.error ?? "unknown"}`]);
  return rows.map(([k, v]) => `${`${k}:`.padEnd(17)}${v}`).join("\n");
}

const showCommand = command({
  meta: { name: "show", description: "Print the proxy's policy state: tool_count, state, policy_revision, last_success" },
  args: { json: { type: "boolean", description: "print the status as JSON" } },
  examples: ["svc policy show", "svc policy show --json", "$SVC_PROXY_PATH policy show"],
  async run({ args }) {
    const s = await fetchPolicyStatus(process.env);
    process.stdout.write(args.json ? `${JSON.stringify(s)}\n` : `${formatPolicyStatus(s)}\n`);
  },
});

export const policyCommand = command({
  meta: { name: "policy", description: "The proxy's policy state" },
  examples: ["$SVC_PROXY_PATH policy show", "svc policy show --json | jq .policy_revision"],
  subCommands: { show: showCommand },
});
