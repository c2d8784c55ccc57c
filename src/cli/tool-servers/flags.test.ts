import { describe, expect, test } from "bun:test";
import { UsageError } from "../../command/index.ts";
import { parseAccessFlag, parseArgsFlag } from "./flags.ts";

describe("svc tool-servers flag values", () => {
  test("--args: comma-separated, or a JSON array for arguments holding commas; order and repeats kept", () => {
    expect(parseArgsFlag("--local-timezone,UTC")).toEqual(["--local-timezone", "UTC"]);
    expect(parseArgsFlag("-v,-v")).toEqual(["-v", "-v"]);
    expect(parseArgsFlag('["--repository","/srv/a, b"]')).toEqual(["--repository", "/srv/a, b"]);
    expect(() => parseArgsFlag("a,,b")).toThrow(UsageError);
    expect(() => parseArgsFlag("[not json")).toThrow("is not a JSON array");
    expect(() => parseArgsFlag("[1,2]")).toThrow("array of strings");
  });
  test("--access: tool=read|write items, tool names as the MCP server lists them (issue 31)", () => {
    expect(parseAccessFlag("list_issues=read,create_issue=write")).toEqual({ list_issues: "read", create_issue: "write" });
    expect(() => parseAccessFlag("create_issue=admin")).toThrow("is not tool=read or tool=write");
    expect(parseAccessFlag("get-sum=read,files.read=write")).toEqual({ "get-sum": "read", "files.read": "write" });
    // a name of Object.prototype's is an own key, sent as such
    expect(JSON.stringify(parseAccessFlag("__proto__=write,toString=read"))).toBe('{"__proto__":"write","toString":"read"}');
    expect(() => parseAccessFlag(`${"x".repeat(129)}=write`)).toThrow("1 to 128 characters");
    expect(() => parseAccessFlag("a=read,,b=write")).toThrow(UsageError);
  });
});
