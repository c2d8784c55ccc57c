import { describe, expect, test } from "bun:test";
import { UsageError } from "../command/index.ts";
import { parseAccessFlag, parseArgsFlag } from "./tool-servers-flags.ts";

describe("svc tool-servers flag values", () => {
  test("--args: comma-separated, or a JSON array for arguments holding commas; order and repeats kept", () => {
    expect(parseArgsFlag("--local-timezone,UTC")).toEqual(["--local-timezone", "UTC"]);
    expect(parseArgsFlag("-v,-v")).toEqual(["-v", "-v"]);
    expect(parseArgsFlag('["--repository","/srv/a, b"]')).toEqual(["--repository", "/srv/a, b"]);
    expect(() => parseArgsFlag("a,,b")).toThrow(UsageError);
    expect(() => parseArgsFlag("[not json")).toThrow("is not a JSON array");
    expect(() => parseArgsFlag("[1,2]")).toThrow("array of strings");
  });
  test("--access: tool=read|write items, tool names under the governable rule", () => {
    expect(parseAccessFlag("list_issues=read,create_issue=write")).toEqual({ list_issues: "read", create_issue: "write" });
    expect(() => parseAccessFlag("create_issue=admin")).toThrow("is not tool=read or tool=write");
    expect(() => parseAccessFlag("create-issue=write")).toThrow('tool name "create-issue"');
    expect(() => parseAccessFlag("a=read,,b=write")).toThrow(UsageError);
  });
});
