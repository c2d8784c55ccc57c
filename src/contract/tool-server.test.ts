import { describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { ManifestTool } from "./manifest.ts";
import { TOOL_NAME_RE } from "./patterns.ts";
import { governedName } from "./mcp-names.ts";
import { checkArgs, checkCommand, checkSecretNames, checkServerName, checkServerUrl, checkToolName, parseSecretLines } from "./tool-server.ts";

const governable = (name: string) => TOOL_NAME_RE.test(name) && Value.Check(ManifestTool, { name, access: "read", required_capabilities: [] });

describe("names: <server>.<tool> is always a governable tool name", () => {
  const servers = ["github", "g", "my-server", "my_server", "A1", "x".repeat(64)];
  // Any name an MCP server may list is one an admin may write; svc maps it (mcp-names.ts).
  const tools = ["create_issue", "_private", "T", "get2", "get-sum", "files.read", "2fa", "a b", "grüße", "toString", "__proto__", "a".repeat(128)];
  test.each(servers)("server %p is accepted and prefixes every accepted tool into a manifest tool name", (server) => {
    expect(checkServerName(server).ok).toBe(true);
    for (const tool of tools) {
      expect(checkToolName(tool, "/t").ok).toBe(true);
      const g = governedName(server, tool);
      if (g.ok) expect(governable(g.name)).toBe(true);
    }
  });
  test.each(["git.hub", "1password", "-x", "_x", "my server", "x".repeat(65), "", "ü"])("server %p is refused", (server) => {
    const c = checkServerName(server);
    expect(c.ok).toBe(false);
    if (!c.ok) expect(c.path).toBe("/name");
  });
  test.each(["", "a".repeat(129), "a\u0000b", "new\nline"])("tool %p is refused (empty, too long, or control characters)", (tool) => {
    expect(checkToolName(tool, "/allowed_tools/0").ok).toBe(false);
  });
});

describe("url, command, args", () => {
  test("the url follows the model endpoint rule and speaks of the url", () => {
    expect(checkServerUrl("https://mcp.example.com/mcp/")).toEqual({ ok: true, endpoint: "https://mcp.example.com/mcp" });
    const creds = checkServerUrl("https://u:p@mcp.example.com/mcp");
    expect(creds).toMatchObject({ ok: false, code: "endpoint_has_credentials" });
    if (!creds.ok) {
      expect(creds.message).toStartWith("url must not contain credentials");
      expect(creds.message).toContain("--bearer or --secrets");
      expect(creds.message).not.toContain("u:p");
    }
    expect(checkServerUrl("http://mcp.example.com")).toMatchObject({ ok: false, code: "endpoint_not_https" });
  });
  test("a command is one program; arguments go apart", () => {
    expect(checkCommand("/opt/mcp/server").ok).toBe(true);
    expect(checkCommand("mcp-server-time").ok).toBe(true);
    expect(checkCommand("uvx mcp-server-time").ok).toBe(false);
    expect(checkCommand("").ok).toBe(false);
    expect(checkCommand("a\u0007b").ok).toBe(false);
    expect(checkArgs(["--repository", "/srv/repo, with comma"]).ok).toBe(true);
    expect(checkArgs(Array.from({ length: 65 }, () => "x")).ok).toBe(false);
    expect(checkArgs(["a\u0000"])).toMatchObject({ ok: false, path: "/args/0" });
  });
});

describe("secrets", () => {
  test("header names for http (not the transport's own), variable names for stdio, no repeats", () => {
    expect(checkSecretNames("http", ["Authorization", "X-Api-Key"]).ok).toBe(true);
    expect(checkSecretNames("http", ["Content-Type"]).ok).toBe(false);
    expect(checkSecretNames("http", ["mcp-session-id"]).ok).toBe(false);
    expect(checkSecretNames("http", ["Bad Header"]).ok).toBe(false);
    expect(checkSecretNames("http", ["X-A", "x-a"]).ok).toBe(false);
    expect(checkSecretNames("stdio", ["GITHUB_TOKEN", "_X"]).ok).toBe(true);
    expect(checkSecretNames("stdio", ["X_A", "x_a"]).ok).toBe(true);
    expect(checkSecretNames("stdio", ["X_A", "X_A"]).ok).toBe(false);
    expect(checkSecretNames("stdio", ["GITHUB-TOKEN"]).ok).toBe(false);
    expect(checkSecretNames("stdio", ["1X"]).ok).toBe(false);
    expect(checkSecretNames("stdio", []).ok).toBe(false);
  });
  test("NAME=value lines: the value keeps everything after the first =; a bad line is named by number, never shown", () => {
    expect(parseSecretLines("A=1\n\nB = x=y \r\n")).toEqual({ ok: true, secrets: { A: "1", B: " x=y " } });
    const bad = parseSecretLines("A=1\nsecret-without-equals\n");
    expect(bad).toEqual({ ok: false, message: expect.stringContaining("line 2") });
    if (!bad.ok) expect(bad.message).not.toContain("secret-without-equals");
    expect(parseSecretLines("A=\n").ok).toBe(false);
    expect(parseSecretLines("A=1\nA=2\n").ok).toBe(false);
    expect(parseSecretLines("\n\n").ok).toBe(false);
  });
});
