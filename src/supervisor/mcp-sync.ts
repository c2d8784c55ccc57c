// The boot tool sync's MCP half (issue 13): the proxy lists the assigned MCP servers' tools;
// the supervisor merges them with the packs' manifest (PUT tools replaces the set wholesale),
// PUTs once with the spec's retries, then tells the proxy what it registered so that later
// polls register changes themselves. An MCP server unreachable at boot serves no tools and is
// logged; the container does not stop for it (packs keep their own rule).
import type { ToolServerStatus } from "../contract/local-api.ts";
import type { ManifestTool, ToolManifest } from "../contract/manifest.ts";
import type { Logger } from "../log/index.ts";
import { MCP_BOOTED_PATH, MCP_TOOLS_PATH } from "../proxy/mcp/local-routes.ts";
import { StartFailure } from "./start-failure.ts";

const LIST_TIMEOUT_MS = 60_000;

async function local(socketPath: string, token: string, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`http://svc-proxy${path}`, { ...init, unix: socketPath, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, signal: AbortSignal.timeout(LIST_TIMEOUT_MS) } as RequestInit);
}

/** The MCP tools the proxy serves after its boot listing; unreachable servers are logged. */
export async function mcpBootTools(socketPath: string, token: string, log: Logger): Promise<ManifestTool[]> {
  let doc: { tools: ManifestTool[]; servers: ToolServerStatus[] };
  try {
    const res = await local(socketPath, token, MCP_TOOLS_PATH);
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    doc = (await res.json()) as typeof doc;
  } catch (e) {
    throw new StartFailure(`the proxy did not list its MCP tools (${MCP_TOOLS_PATH}): ${(e as Error).message}`);
  }
  for (const s of doc.servers) {
    if (s.state === "ok") log.info(`mcp server "${s.name}": ${s.tool_count} tool(s)`, { server: s.name, tool_count: s.tool_count });
    else log.warn(`mcp server "${s.name}" is unreachable at boot and serves no tools: ${s.error ?? "unknown"}`, { server: s.name });
  }
  return doc.tools;
}

/** Tell the proxy what the boot tool sync registered (best effort: it only enables re-registration). */
export async function reportBooted(socketPath: string, token: string, packs: ToolManifest, mcp: ManifestTool[], log: Logger): Promise<void> {
  try {
    const res = await local(socketPath, token, MCP_BOOTED_PATH, { method: "PUT", body: JSON.stringify({ packs, mcp }) });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
  } catch (e) {
    log.warn("the proxy was not told what the tool sync registered; MCP tool changes are registered at the next start", { error: (e as Error).message });
  }
}
