// `svc boot sync` where no proxy answers on SVC_RUNTIME_SOCKET_PATH (docs/mcp.md): PUT tools
// replaces the installation's whole set, and only a running proxy knows what its MCP servers
// serve. Rather than drop what it cannot know, the sync sends the MCP tools registered now
// again as they are: the installation's tools (from its policy bundle) named `<server>.<tool>`
// for a server assigned to the agent. The proxy corrects them at its next change or start.
import type { PolicyBundle } from "../contract/bundle.ts";
import type { ManifestTool } from "../contract/manifest.ts";
import { POLICY_BUNDLE_PATH } from "../contract/runtime-api.ts";
import { ControlPlaneClient, ControlPlaneError } from "../proxy/link/control-plane-client.ts";
import { VERSION } from "../version.ts";
import { type AttemptFailure, type SyncOptions, SYNC_ATTEMPT_TIMEOUT_MS, explainNetworkError, explainStatus, withAttempts } from "./sync.ts";

/** Pure: the registered tools that belong to an assigned MCP server, as the manifest carries them. */
export function registeredMcpTools(bundle: Pick<PolicyBundle, "tools" | "tool_servers">): ManifestTool[] {
  const servers = new Set((bundle.tool_servers ?? []).map((s) => s.name));
  return bundle.tools.flatMap((t) => {
    const server = t.name.includes(".") ? t.name.slice(0, t.name.indexOf(".")) : "";
    return servers.has(server) ? [{ name: t.name, access: t.access, required_capabilities: t.required_capabilities, pack: `mcp:${server}` }] : [];
  });
}

/** What a failed read of the bundle means, in the tool sync's words (explainStatus, explainNetworkError). */
function bundleFailure(e: unknown, base: string, url: URL, egress: SyncOptions["egress"]): AttemptFailure {
  if (!(e instanceof ControlPlaneError)) return explainNetworkError(e, url, egress);
  if (e.status === null) return explainNetworkError(e.cause ?? e, url, egress);
  if (e.status >= 400) return explainStatus(e.status, { detail: e.detail ?? undefined, code: e.code ?? undefined }, base, POLICY_BUNDLE_PATH);
  if (e.status >= 300) return { retry: false, explanation: e.message }; // a redirect, not followed (the client names it)
  // A 2xx that is no bundle (not JSON, or not the schema): the same answer again would not be one either.
  return { retry: false, explanation: `the installation's policy bundle (${POLICY_BUNDLE_PATH}) is not one: ${e.message}` };
}

/** Read them with the runtime API client (as the proxy reads its bundle) and the tool sync's attempts and explanations; throws ToolSyncError. */
export async function readRegisteredMcpTools(opts: Omit<SyncOptions, "manifest">): Promise<ManifestTool[]> {
  const baseUrl = opts.controlPlaneUrl.replace(/\/+$/, "");
  const url = new URL(`${baseUrl}${POLICY_BUNDLE_PATH}`);
  // The tool sync's own PUT trusts the system roots only, and so does this read (ca: null).
  const client = new ControlPlaneClient(
    { baseUrl, token: opts.token, version: VERSION, egressProxy: opts.egress.proxy ?? null, noProxy: opts.egress.noProxy, ca: null, timeoutMs: SYNC_ATTEMPT_TIMEOUT_MS },
    opts.fetch ?? fetch,
  );
  return withAttempts(opts, async () => {
    try {
      const answer = await client.fetchBundle(2, null);
      // No ETag was sent, so the answer is the bundle (a 304 would be a broken intermediary's).
      if (answer.status !== 200) return { ok: false, failure: { retry: true, explanation: `${POLICY_BUNDLE_PATH} answered 304 to a read without an ETag` } };
      return { ok: true, value: registeredMcpTools(answer.bundle) };
    } catch (e) {
      return { ok: false, failure: bundleFailure(e, opts.controlPlaneUrl, url, opts.egress) };
    }
  });
}
