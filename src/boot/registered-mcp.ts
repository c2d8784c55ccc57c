// `svc boot sync` where no proxy answers on SVC_RUNTIME_SOCKET_PATH (docs/mcp.md): PUT tools
// replaces the installation's whole set, and only a running proxy knows what its MCP servers
// serve. Rather than drop what it cannot know, the sync sends the MCP tools registered now
// again as they are: the installation's tools (from its policy bundle) named `<server>.<tool>`
// for a server assigned to the agent. The proxy corrects them at its next change or start.
import { type PolicyBundle, PolicyBundle as PolicyBundleSchema } from "../contract/bundle.ts";
import type { ManifestTool } from "../contract/manifest.ts";
import { POLICY_BUNDLE_PATH } from "../contract/runtime-api.ts";
import { firstProblem } from "../proxy/schema-check.ts";
import { proxyFor } from "./egress.ts";
import { type SyncOptions, SYNC_ATTEMPT_TIMEOUT_MS, explainNetworkError, explainStatus, readProblem, withAttempts } from "./sync.ts";

/** Pure: the registered tools that belong to an assigned MCP server, as the manifest carries them. */
export function registeredMcpTools(bundle: Pick<PolicyBundle, "tools" | "tool_servers">): ManifestTool[] {
  const servers = new Set((bundle.tool_servers ?? []).map((s) => s.name));
  return bundle.tools.flatMap((t) => {
    const server = t.name.includes(".") ? t.name.slice(0, t.name.indexOf(".")) : "";
    return servers.has(server) ? [{ name: t.name, access: t.access, required_capabilities: t.required_capabilities, pack: `mcp:${server}` }] : [];
  });
}

/** Read them with the tool sync's attempts and explanations; throws ToolSyncError. */
export async function readRegisteredMcpTools(opts: Omit<SyncOptions, "manifest">): Promise<ManifestTool[]> {
  const doFetch = opts.fetch ?? fetch;
  const url = new URL(`${opts.controlPlaneUrl.replace(/\/+$/, "")}${POLICY_BUNDLE_PATH}?version=2`);
  const proxy = proxyFor(url, opts.egress);
  return withAttempts(opts, async () => {
    try {
      const res = await doFetch(url, {
        headers: { authorization: `Bearer ${opts.token}`, accept: "application/json" },
        signal: AbortSignal.timeout(SYNC_ATTEMPT_TIMEOUT_MS),
        ...(proxy ? { proxy } : {}),
      } as RequestInit);
      if (!res.ok) return { ok: false, failure: explainStatus(res.status, await readProblem(res), opts.controlPlaneUrl, POLICY_BUNDLE_PATH) };
      const doc = (await res.json()) as unknown;
      const problem = firstProblem(PolicyBundleSchema, doc);
      if (problem) return { ok: false, failure: { retry: false, explanation: `the installation's policy bundle (${POLICY_BUNDLE_PATH}) is not one: ${problem}` } };
      return { ok: true, value: registeredMcpTools(doc as PolicyBundle) };
    } catch (e) {
      return { ok: false, failure: explainNetworkError(e, url, opts.egress) };
    }
  });
}
