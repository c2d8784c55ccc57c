import { describe, expect, test } from "bun:test";
import type { BundleToolServer } from "../../contract/bundle.ts";
import { serverTools } from "./registry.ts";

const server = (over: Partial<BundleToolServer> = {}): BundleToolServer => ({
  id: "ts_1",
  name: "notes",
  transport: "http",
  url: "https://127.0.0.1:1/mcp",
  command: null,
  args: [],
  secrets_sealed: null,
  allowed_tools: null,
  access_overrides: {},
  ...over,
});
const tool = (name: string, readOnlyHint?: boolean) => ({ name, inputSchema: { type: "object" as const }, ...(readOnlyHint === undefined ? {} : { annotations: { readOnlyHint } }) });

describe("serverTools", () => {
  test("names tools <server>.<tool>; readOnlyHint true is read, anything else write", () => {
    const r = serverTools(server(), [tool("lookup", true), tool("add_note", false), tool("plain")]);
    expect(r.entries.map((e) => [e.name, e.upstream, e.access])).toEqual([
      ["notes.lookup", "lookup", "read"],
      ["notes.add_note", "add_note", "write"],
      ["notes.plain", "plain", "write"],
    ]);
  });

  test("an admin override wins over the annotation", () => {
    const r = serverTools(server({ access_overrides: { lookup: "write", plain: "read" } }), [tool("lookup", true), tool("plain")]);
    expect(r.entries.map((e) => e.access)).toEqual(["write", "read"]);
  });

  test("the allow-list keeps only the named tools", () => {
    const r = serverTools(server({ allowed_tools: ["lookup"] }), [tool("lookup", true), tool("add_note")]);
    expect(r.entries.map((e) => e.name)).toEqual(["notes.lookup"]);
  });

  test("any name is served: kebab-case as it is, others escaped; none collide", () => {
    const r = serverTools(server(), [tool("get-sum"), tool("files.read"), tool("ok")]);
    expect(r.entries.map((e) => [e.name, e.upstream])).toEqual([
      ["notes.get-sum", "get-sum"],
      ["notes.files--2eread", "files.read"],
      ["notes.ok", "ok"],
    ]);
    expect(r.skipped).toEqual([]);
  });

  test("a name listed twice is refused, both times, naming why; an ungovernable name is skipped with why", () => {
    const r = serverTools(server(), [tool("twice"), tool("ok"), tool("twice", true), tool(""), tool("é".repeat(90))]);
    expect(r.entries.map((e) => e.name)).toEqual(["notes.ok"]);
    expect(r.skipped.map((s) => s.tool)).toEqual(["twice", "", "é".repeat(90)]);
    expect(r.skipped[0]!.why).toContain("lists 2 tools named");
    expect(r.skipped[2]!.why).toContain("over the limit");
  });

  test.each(["toString", "constructor", "valueOf", "__proto__", "hasOwnProperty"])("a tool named %p is a name like any other: its access is its own, not Object.prototype's", (name) => {
    const r = serverTools(server(), [tool(name, true), tool("x")]);
    expect(r.entries.map((e) => [e.name, e.access])).toEqual([
      [`notes.${name}`, "read"],
      ["notes.x", "write"],
    ]);
    const overridden = serverTools(server({ access_overrides: JSON.parse(`{"${name}": "write"}`) }), [tool(name, true)]);
    expect(overridden.entries[0]!.access).toBe("write");
  });

  test("the report lists every governable tool with its annotated access, the allow-list applied by the control plane", () => {
    const r = serverTools(server({ allowed_tools: ["a"], access_overrides: { a: "write" } }), [tool("a", true), tool("b", true)]);
    expect(r.entries.map((e) => e.name)).toEqual(["notes.a"]);
    expect(r.listed).toEqual([
      { name: "notes.a", upstream: "a", access: "read" },
      { name: "notes.b", upstream: "b", access: "read" },
    ]);
  });
});
