// Directory sync's admin-set URLs pass the outbound URL policy: at save time and before each call.
import { describe, expect, test } from "bun:test";
import { testControlPlane } from "../testing.ts";
import { settingsBody as body } from "./fixtures.ts";

describe("directory sync outbound URLs", () => {
  test("non-public authority or Graph hosts are refused with 422 outbound_url_refused", async () => {
    const cp = await testControlPlane({ config: { allowPrivateOutbound: false } });
    for (const [field, url, why] of [
      ["authority_url", "https://169.254.169.254", "link-local"],
      ["authority_url", "https://10.0.0.7:8443", "private"],
      ["graph_url", "https://[::1]", "loopback"],
      ["graph_url", "https://localhost:9443", "loopback"],
      ["graph_url", "https://100.64.1.1", "CGNAT"],
    ] as const) {
      const res = await cp.call("PUT", cp.org("/directory-sync"), { body: body({ [field]: url }) });
      expect([field, url, res.status, res.json.code]).toEqual([field, url, 422, "outbound_url_refused"]);
      expect(res.json.detail).toContain(field);
      expect(res.json.detail).toContain(why);
    }
    // Plain http stays refused, whatever the operator setting.
    const http = await cp.call("PUT", cp.org("/directory-sync"), { body: body({ graph_url: "http://graph.example" }) });
    expect(http.json.detail).toContain("must use https");
  });

  test("checked again before each call: a stored private URL is not called once the operator setting is off", async () => {
    const cp = await testControlPlane();
    expect(cp.deps.config.allowPrivateOutbound).toBe(true);
    const saved = await cp.call("PUT", cp.org("/directory-sync"), { body: body({ authority_url: "https://127.0.0.1:1", graph_url: "https://127.0.0.1:1" }) });
    expect(saved.status).toBe(200);
    cp.deps.config.allowPrivateOutbound = false;
    const run = await cp.call("POST", cp.org("/directory-sync/run"), { body: {} });
    expect(run.json.status).toBe("failed");
    expect(run.json.errors[0]).toContain("127.0.0.1");
    expect(run.json.errors[0]).toContain("loopback");
    expect(run.json.counts.graph_requests).toBe(0);
  });
});
