// The tool sync sends the packs' tools only (issue 31): an MCP server's tools are the agent's,
// reported by the proxies themselves, so with no packs nothing is sent, whatever the proxy serves.
import { afterAll, expect, test } from "bun:test";
import { fakeBundle } from "../proxy/testing/bundle.ts";
import { startFakeControlPlane } from "../proxy/testing/fake-control-plane.ts";
import { runToolSync } from "./tool-sync.ts";

const cp = startFakeControlPlane(fakeBundle({ version: 2 }), "svc_rt_sync");
afterAll(async () => cp.stop());
const log = { info() {}, warn() {}, error() {} };
const cfg = { controlPlaneUrl: cp.url, token: "svc_rt_sync", packs: [], python: "python3", egress: { noProxy: [] } };

test("no packs: skipped, nothing sent", async () => {
  const before = cp.toolPuts.length;
  expect((await runToolSync(cfg, "/nonexistent", log)).skipped).toBe(true);
  expect(cp.toolPuts.length).toBe(before);
});
