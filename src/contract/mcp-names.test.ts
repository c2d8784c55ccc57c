import { describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { ManifestTool } from "./manifest.ts";
import { GOVERNED_NAME_MAX, governedMethod, governedName, upstreamName } from "./mcp-names.ts";
import { parseDestination, TOOL_NAME_RE } from "./patterns.ts";

const governable = (name: string) => TOOL_NAME_RE.test(name) && Value.Check(ManifestTool, { name, access: "read", required_capabilities: [] }) && parseDestination(`tool:${name}`).ok;

describe("MCP tool names to governed names (docs/mcp.md, Tool names)", () => {
  test("names of letters, digits, _ and - are kept as they are: server-everything's kebab-case included", () => {
    for (const n of ["get-sum", "trigger-long-running-operation", "read_file", "T", "2fa", "-x", "x-", "_"]) expect(governedMethod(n)).toBe(n);
  });
  test("every other name is escaped, byte by byte, with -- and two hex digits", () => {
    expect(governedMethod("files.read")).toBe("files--2eread");
    expect(governedMethod("a--b")).toBe("a--2d--2db");
    expect(governedMethod("a b/c")).toBe("a--20b--2fc");
    expect(governedMethod("grüße")).toBe("gr--c3--bc--c3--9fe");
    expect(governedMethod("-a.")).toBe("--2da--2e");
  });
  const odd = ["get-sum", "files.read", "a--b", "a b", "grüße", "𝒳", "toString", "__proto__", "constructor", "valueOf", "-", "--", "a-", ".", "x.y.z", "tab\there", 'quote"d', "日本語"];
  test.each(odd)("%p is mapped to a governable name and back (reversible)", (n) => {
    const g = governedName("srv", n);
    expect(g.ok).toBe(true);
    if (!g.ok) return;
    expect(governable(g.name)).toBe(true);
    expect(upstreamName(g.name.slice(4))).toBe(n);
  });
  test("one to one: distinct names never share a governed name", () => {
    const seen = new Map<string, string>();
    for (const n of [...odd, "a.b", "a--2eb", "a-2eb", "a_2eb", "A.b"]) {
      const m = governedMethod(n);
      expect(seen.get(m) ?? n).toBe(n);
      seen.set(m, n);
    }
  });
  test("a method no name maps to is not decoded into one", () => {
    for (const m of ["a--2Eb", "a--zz", "a---", "a--2", "a--c3", "a.b", "", "a--61"]) expect(upstreamName(m)).toBeNull();
  });
  test("a name whose governed form passes the bound is refused, naming the limit; an empty one too", () => {
    const long = governedName("srv", "é".repeat(40));
    expect(long).toMatchObject({ ok: false });
    if (!long.ok) expect(long.why).toContain(String(GOVERNED_NAME_MAX));
    expect(governedName("srv", "")).toMatchObject({ ok: false });
    expect(governedName("srv", "a".repeat(GOVERNED_NAME_MAX - 4)).ok).toBe(true);
  });
});

describe("tool:<prefix>.* patterns", () => {
  test("parse as every tool of a server; other wildcards are refused", () => {
    expect(parseDestination("tool:everything.*")).toEqual({ ok: true, value: { kind: "tools", prefix: "everything" } });
    expect(parseDestination("tool:my-server.*")).toEqual({ ok: true, value: { kind: "tools", prefix: "my-server" } });
    for (const bad of ["tool:*", "tool:a.b*", "tool:*.x", "tool:a.*.b", "tool:.*"]) expect(parseDestination(bad).ok).toBe(false);
  });
});
