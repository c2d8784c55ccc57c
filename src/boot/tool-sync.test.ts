// The tool sync with a running proxy's MCP tools (issue 13): PUT tools replaces the set, so
// `svc boot sync` sends them along; with neither packs nor MCP tools nothing is sent.
import { afterAll, expect, test } from "bun:test";
import type { PolicyBundle } from "../contract/bundle.ts";
import { startFakeControlPlane } from "../proxy/testing/fake-control-plane.ts";
import { runToolSync } from "./tool-sync.ts";

const bundle = { version: 2, revision: 1, generated_at: "2026-01-01T00:00:00.000Z", organization_id: "o", workspace_id: "w", installation_id: "i", agent_id: "a", tools: [], policies: [], identities: [], model_profile: null, recipients: [] } as PolicyBundle;
const cp = startFakeControlPlane(bundle, "svc_rt_sync");
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
