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

  test("a tool name that cannot be governed is skipped and named", () => {
    const r = serverTools(server(), [tool("bad-name"), tool("ok")]);
    expect(r.entries.map((e) => e.name)).toEqual(["notes.ok"]);
    expect(r.skipped[0]!.tool).toBe("bad-name");
  });
});
