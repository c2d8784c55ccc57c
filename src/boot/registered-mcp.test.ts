// Which registered tools `svc boot sync` keeps when no proxy answers: those of an assigned MCP
// server (`<server>.<tool>`), nothing else.
import { expect, test } from "bun:test";
import type { BundleToolServer } from "../contract/bundle.ts";
import { registeredMcpTools } from "./registered-mcp.ts";

const server = (name: string) => ({ id: `ts_${name}`, name, transport: "http", url: `https://${name}.example.com/mcp`, command: null, args: [], secrets_sealed: null, allowed_tools: null, access_overrides: {} }) as BundleToolServer;
const tool = (name: string, access: "read" | "write" = "read") => ({ name, access, required_capabilities: [] });

test("keeps the tools of assigned servers as they are registered; pack tools and other prefixes are not kept", () => {
  const kept = registeredMcpTools({ tools: [tool("crm.lookup_customer"), tool("kb.lookup"), tool("kb.add_note", "write"), tool("kbx.other"), tool("plain"), tool("git.log")], tool_servers: [server("kb"), server("git")] });
  expect(kept).toEqual([
    { name: "kb.lookup", access: "read", required_capabilities: [], pack: "mcp:kb" },
    { name: "kb.add_note", access: "write", required_capabilities: [], pack: "mcp:kb" },
    { name: "git.log", access: "read", required_capabilities: [], pack: "mcp:git" },
  ]);
});

test("no assigned server: nothing is kept", () => {
  expect(registeredMcpTools({ tools: [tool("kb.lookup")], tool_servers: [] })).toEqual([]);
  expect(registeredMcpTools({ tools: [tool("kb.lookup")] } as never)).toEqual([]);
});
