// From an assigned server's listed tools to the entries svc governs (pure). The governed name
// is `<server>.<method>`, the method being the upstream name mapped by contract/mcp-names.ts
// (kept as it is when it is letters, digits, `_` and `-`; escaped otherwise), so any name a
// server lists can be served. The access is the admin's override, else read when the tool says
// readOnlyHint: true, else write. A tool outside the server's allow-list is not served; a tool
// whose name cannot be governed (empty, too long) or that the server lists twice is skipped and
// named with why, so the operator sees what is missing (readiness, the console, one log line
// per change). Names are keys of Maps or looked up with Object.hasOwn: a tool named `toString`
// or `__proto__` is a name like any other.
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import type { BundleToolServer } from "../../contract/bundle.ts";
import type { ToolAccess } from "../../contract/manifest.ts";
import { governedName } from "../../contract/mcp-names.ts";
import type { McpListedTool, McpSkippedTool } from "../../contract/runtime-api.ts";

export type McpToolEntry = {
  /** The governed name, `<server>.<method>` (policies say `tool:<name>`). */
  name: string;
  server: string;
  /** The tool's name at the upstream. */
  upstream: string;
  access: ToolAccess;
  tool: Tool;
};

/**
 * What one listing gives: `entries` are served now (within the allow-list); `listed` is every
 * governable tool with the access its annotations give, as reported to the control plane
 * (which applies the allow-list and overrides itself); `skipped` the tools that cannot be served.
 */
export type ServerTools = { entries: McpToolEntry[]; listed: McpListedTool[]; skipped: McpSkippedTool[] };

/** The access a tool's annotations give: readOnlyHint true is read, anything else write. */
export function annotatedAccess(tool: Tool): ToolAccess {
  return tool.annotations?.readOnlyHint === true ? "read" : "write";
}

export function toolAccess(server: Pick<BundleToolServer, "access_overrides">, tool: Tool): ToolAccess {
  return Object.hasOwn(server.access_overrides, tool.name) ? server.access_overrides[tool.name]! : annotatedAccess(tool);
}

export function serverTools(server: BundleToolServer, listed: readonly Tool[]): ServerTools {
  const allowed = server.allowed_tools ? new Set(server.allowed_tools) : null;
  const out: ServerTools = { entries: [], listed: [], skipped: [] };
  const count = new Map<string, number>();
  for (const tool of listed) count.set(tool.name, (count.get(tool.name) ?? 0) + 1);
  for (const tool of listed) {
    const n = count.get(tool.name)!;
    if (n > 1) {
      // Both refused: which of the two a call would reach is the server's guess, not policy's.
      out.skipped.push({ tool: tool.name, why: `the server lists ${n} tools named "${tool.name}"; svc serves neither, as it cannot tell which a call would reach` });
      count.set(tool.name, -1);
      continue;
    }
    if (n < 0) continue;
    const g = governedName(server.name, tool.name);
    if (!g.ok) {
      out.skipped.push({ tool: tool.name.slice(0, 512), why: g.why });
      continue;
    }
    out.listed.push({ name: g.name, upstream: tool.name, access: annotatedAccess(tool) });
    if (allowed && !allowed.has(tool.name)) continue;
    out.entries.push({ name: g.name, server: server.name, upstream: tool.name, access: toolAccess(server, tool), tool });
  }
  return out;
}
