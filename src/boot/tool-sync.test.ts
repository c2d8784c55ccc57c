// The tool sync with a running proxy's MCP tools (issue 13): PUT tools replaces the set, so
// `svc boot sync` sends them along; with neither packs nor MCP tools nothing is sent.
import { afterAll, expect, test } from "bun:test";
import { fakeBundle } from "../proxy/testing/bundle.ts";
import { startFakeControlPlane } from "../proxy/testing/fake-control-plane.ts";
import { runToolSync } from "./tool-sync.ts";

const cp = startFakeControlPlane(fakeBundle({ version: 2 }), "svc_rt_sync");
afterAll(async () => cp.stop());
const log = { info() {}, warn() {}, error() {} };
const cfg = { controlPlaneUrl: cp.url, token: "svc_rt_sync", packs: [], python: "python3", egress: { noProxy: [] } };

test("no packs but MCP tools: the MCP tools are registered", async () => {
  const r = await runToolSync({ ...cfg, mcpTools: [{ name: "kb.lookup", access: "read", required_capabilities: [], pack: "mcp:kb" }] }, "/nonexistent", log);
  expect(r.skipped).toBe(false);
  expect(cp.toolPuts.at(-1)!.tools.map((t) => t.name)).toEqual(["kb.lookup"]);
});

test("neither packs nor MCP tools: skipped, nothing sent", async () => {
  const before = cp.toolPuts.length;
  expect((await runToolSync(cfg, "/nonexistent", log)).skipped).toBe(true);
  expect(cp.toolPuts.length).toBe(before);
});
