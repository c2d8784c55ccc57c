// From an assigned server's listed tools to the entries svc governs (pure). The governed name
// is `<server>.<tool>`, which must fit the manifest's tool-name rule; the access is the
// admin's override, else read when the tool says readOnlyHint: true, else write. A tool outside
// the server's allow-list is not served; one whose name cannot be governed is skipped and
// named, so the operator sees why it is missing.
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { Value } from "@sinclair/typebox/value";
import type { BundleToolServer } from "../../contract/bundle.ts";
import { ManifestTool, type ToolAccess } from "../../contract/manifest.ts";

export type McpToolEntry = {
  /** The governed name, `<server>.<tool>` (policies say `tool:<name>`). */
  name: string;
  server: string;
  /** The tool's name at the upstream. */
  upstream: string;
  access: ToolAccess;
  tool: Tool;
};

export type ServerTools = { entries: McpToolEntry[]; skipped: { tool: string; why: string }[] };

export function governedName(server: string, tool: string): string {
  return `${server}.${tool}`;
}

export function toolAccess(server: BundleToolServer, tool: Tool): ToolAccess {
  return server.access_overrides[tool.name] ?? (tool.annotations?.readOnlyHint === true ? "read" : "write");
}

export function serverTools(server: BundleToolServer, listed: readonly Tool[]): ServerTools {
  const allowed = server.allowed_tools ? new Set(server.allowed_tools) : null;
  const out: ServerTools = { entries: [], skipped: [] };
  const seen = new Set<string>();
  for (const tool of listed) {
    if (allowed && !allowed.has(tool.name)) continue;
    const name = governedName(server.name, tool.name);
    if (!Value.Check(ManifestTool, { name, access: "read", required_capabilities: [] })) {
      out.skipped.push({ tool: tool.name, why: `"${name}" is not a governable tool name (letters, digits and _ after the dot)` });
      continue;
    }
    if (seen.has(name)) {
      out.skipped.push({ tool: tool.name, why: "listed twice" });
      continue;
    }
    seen.add(name);
    out.entries.push({ name, server: server.name, upstream: tool.name, access: toolAccess(server, tool), tool });
  }
  return out;
}
