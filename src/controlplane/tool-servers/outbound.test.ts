// The URLs a runtime will call with sealed credentials (issue 31): an MCP server's and a model
// profile's endpoint pass the outbound URL policy when saved, as SIEM sinks and directory sync do.
import { describe, expect, test } from "bun:test";
import { testControlPlane } from "../testing.ts";

const targets = [
  ["https://169.254.169.254/mcp", "link-local"],
  ["https://10.0.0.7:8443/mcp", "private"],
  ["https://127.0.0.1:8420/mcp", "loopback"],
  ["https://0x7f000001/mcp", "loopback"],
  ["https://[::1]/mcp", "loopback"],
  ["https://localhost:9443/mcp", "loopback"],
] as const;

describe("runtime URLs at save", () => {
  test.each(targets)("tool server url %s is refused (%s); so is a PATCH to it", async (url, why) => {
    const cp = await testControlPlane({ config: { allowPrivateOutbound: false } });
    const res = await cp.call("POST", cp.org("/tool-servers"), { body: { name: "gh", transport: "http", url, workspace: "default" } });
    expect([res.status, res.json.code]).toEqual([422, "outbound_url_refused"]);
    expect(res.json.detail).toContain(why);
    expect(res.json.detail).toContain("SVC_CP_ALLOW_PRIVATE_OUTBOUND");
    cp.deps.config.allowPrivateOutbound = true;
    expect((await cp.call("POST", cp.org("/tool-servers"), { body: { name: "gh", transport: "http", url: "https://mcp.example.com/mcp", workspace: "default" } })).status).toBe(201);
    cp.deps.config.allowPrivateOutbound = false;
    const patch = await cp.call("PATCH", cp.org("/tool-servers/gh?workspace=default"), { body: { url } });
    expect([patch.status, patch.json.code]).toEqual([422, "outbound_url_refused"]);
    expect((await cp.call("GET", cp.org("/tool-servers/gh?workspace=default"))).json.url).toBe("https://mcp.example.com/mcp");
  });

  test("a model profile's endpoint is refused the same way; the syntax rule still answers first", async () => {
    const cp = await testControlPlane({ config: { allowPrivateOutbound: false } });
    const body = (endpoint: string) => ({ display_name: "p", endpoint, auth_type: "none", default_model: "m", workspace: "default" });
    const res = await cp.call("POST", cp.org("/model-profiles"), { body: body("https://169.254.169.254/v1") });
    expect([res.status, res.json.code]).toEqual([422, "outbound_url_refused"]);
    expect((await cp.call("POST", cp.org("/model-profiles"), { body: body("http://10.0.0.1/v1") })).json.code).toBe("endpoint_not_https");
    cp.deps.config.allowPrivateOutbound = true;
    expect((await cp.call("POST", cp.org("/model-profiles"), { body: body("https://127.0.0.1:8443/v1") })).status).toBe(201);
  });
});
