import { describe, expect, test } from "bun:test";
import { ConfigError, loadConfig, parseControlPlaneUrl, parseDuration, parseSize } from "./config.ts";

const base = { SVC_RUNTIME_TOKEN: "svc_rt_x", SVC_RUNTIME_CONTROL_PLANE_URL: "https://cp.example.com", SVC_PROXY_STATE_DIR: "/tmp/p" };

describe("parseDuration", () => {
  test("units and combinations", () => {
    expect(parseDuration("30s")).toBe(30_000);
    expect(parseDuration("1m")).toBe(60_000);
    expect(parseDuration("1m30s")).toBe(90_000);
    expect(parseDuration("250ms")).toBe(250);
    expect(parseDuration("2h")).toBe(7_200_000);
    expect(parseDuration("45")).toBe(45_000);
    expect(parseDuration("1.5s")).toBe(1500);
  });
  test("garbage is refused", () => {
    for (const bad of ["", "m", "1x", "1m junk", "-1s", "s30"]) expect(parseDuration(bad)).toBeNull();
  });
});

describe("SVC_PROXY_AUDIT_LOW_SPACE", () => {
  const base = { SVC_RUNTIME_TOKEN: "t", SVC_RUNTIME_CONTROL_PLANE_URL: "https://cp.example.com", SVC_PROXY_STATE_DIR: "/tmp/svc-px" };
  test("a size in bytes or with a binary unit; 64 MiB by default", () => {
    expect([parseSize("1048576"), parseSize("64MiB"), parseSize("512k"), parseSize("1.5GiB"), parseSize("2 MB")]).toEqual([1048576, 64 * 2 ** 20, 512 * 1024, 1.5 * 2 ** 30, 2 * 2 ** 20]);
    expect(loadConfig(base).auditLowSpaceBytes).toBe(64 * 2 ** 20);
    expect(loadConfig({ ...base, SVC_PROXY_AUDIT_LOW_SPACE: "256MiB" }).auditLowSpaceBytes).toBe(256 * 2 ** 20);
  });
  test("anything else is refused, naming the variable", () => {
    for (const bad of ["lots", "-1", "5 TB", "1e9"]) expect(parseSize(bad)).toBeNull();
    expect(() => loadConfig({ ...base, SVC_PROXY_AUDIT_LOW_SPACE: "lots" })).toThrow(/SVC_PROXY_AUDIT_LOW_SPACE "lots" is not a size/);
  });
});

describe("control-plane URL", () => {
  test("accepts a base URL, strips a trailing slash, keeps a path prefix", () => {
    expect(parseControlPlaneUrl("https://cp.example.com/")).toBe("https://cp.example.com");
    expect(parseControlPlaneUrl("https://example.com/svc")).toBe("https://example.com/svc");
  });
  test("refuses /api/v1 with a message that says what to do", () => {
    expect(() => parseControlPlaneUrl("https://cp.example.com/api/v1")).toThrow(/SVC_RUNTIME_CONTROL_PLANE_URL .*ends in \/api\/v1.*https:\/\/cp\.example\.com/);
    expect(() => parseControlPlaneUrl("https://cp.example.com/api/v1/")).toThrow(ConfigError);
    expect(() => parseControlPlaneUrl("https://cp.example.com/api/v1/runtime")).toThrow(ConfigError);
  });
  test("refuses non-URLs, credentials, queries", () => {
    expect(() => parseControlPlaneUrl("cp.example.com")).toThrow(/not a URL/);
    expect(() => parseControlPlaneUrl("https://u:p@cp.example.com")).toThrow(/credentials/);
    expect(() => parseControlPlaneUrl("https://cp.example.com?x=1")).toThrow(/query/);
  });
});

describe("credentials in URLs never reach an error", () => {
  test("a refused egress proxy URL is quoted with its password redacted", () => {
    expect(() => loadConfig({ ...base, SVC_PROXY_EGRESS_PROXY: "socks5://alice:s3cret@proxy:1080" })).toThrow('SVC_PROXY_EGRESS_PROXY "socks5://alice:***@proxy:1080" is not an http(s) proxy URL');
  });
  test("an unparsable control-plane URL is quoted with its password redacted", () => {
    let message = "";
    try {
      parseControlPlaneUrl("https://bob:s3cret@cp example.com");
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toContain("bob:***@");
    expect(message).not.toContain("s3cret");
  });
});

describe("loadConfig", () => {
  test("defaults", () => {
    const c = loadConfig(base);
    expect(c).toMatchObject({
      token: "svc_rt_x",
      controlPlaneUrl: "https://cp.example.com",
      stateDir: "/tmp/p",
      socketPath: "/tmp/p/proxy.sock",
      auditSpoolDir: "/tmp/p/audit-spool",
      heartbeatIntervalMs: 60_000,
      pollIntervalMs: null,
      bundleVersion: 1,
      egressProxy: null,
      noProxy: [],
      caFile: null,
    });
    expect(loadConfig({ ...base, SVC_PROXY_STATE_DIR: undefined, SVC_STATE_DIR: "/data" }).stateDir).toBe("/data/proxy");
  });
  test("every variable read and validated, naming the variable", () => {
    const c = loadConfig({
      ...base,
      SVC_PROXY_HEARTBEAT_INTERVAL: "30s",
      SVC_PROXY_POLL_INTERVAL: "200ms",
      SVC_PROXY_BUNDLE_VERSION: "2",
      SVC_PROXY_EGRESS_PROXY: "http://proxy:3128",
      SVC_PROXY_NO_PROXY: "a,b",
      SVC_PROXY_CA_FILE: "/etc/ca.pem",
      SVC_PROXY_AUDIT: "/spool",
      SVC_RUNTIME_SOCKET_PATH: "/run/p.sock",
    });
    expect(c).toMatchObject({
      heartbeatIntervalMs: 30_000,
      pollIntervalMs: 200,
      bundleVersion: 2,
      egressProxy: "http://proxy:3128",
      noProxy: ["a", "b"],
      caFile: "/etc/ca.pem",
      auditSpoolDir: "/spool",
      socketPath: "/run/p.sock",
    });
    expect(c.caInDefaultStore).toBe(false);
    // The CA file is in Bun's default store only when NODE_EXTRA_CA_CERTS names that very file.
    expect(loadConfig({ ...base, SVC_PROXY_CA_FILE: "/etc/ca.pem", NODE_EXTRA_CA_CERTS: "/etc/ca.pem" }).caInDefaultStore).toBe(true);
    expect(loadConfig({ ...base, SVC_PROXY_CA_FILE: "/etc/ca.pem", NODE_EXTRA_CA_CERTS: "/etc/other.pem" }).caInDefaultStore).toBe(false);
    expect(loadConfig({ ...base, NODE_EXTRA_CA_CERTS: "/etc/ca.pem" }).caInDefaultStore).toBe(false);
    expect(() => loadConfig({ ...base, SVC_RUNTIME_TOKEN: "" })).toThrow(/SVC_RUNTIME_TOKEN/);
    expect(c.frontendToken).toBeNull();
    expect(loadConfig({ ...base, SVC_FRONTEND_TOKEN: `svc_fe_${"a".repeat(43)}` }).frontendToken).toBe(`svc_fe_${"a".repeat(43)}`);
    expect(() => loadConfig({ ...base, SVC_FRONTEND_TOKEN: "short" })).toThrow(/SVC_FRONTEND_TOKEN is too short/);
    expect(() => loadConfig({ ...base, SVC_RUNTIME_TOKEN: "x".repeat(40), SVC_FRONTEND_TOKEN: "x".repeat(40) })).toThrow(/must differ from SVC_RUNTIME_TOKEN/);
    expect(() => loadConfig({ ...base, SVC_RUNTIME_CONTROL_PLANE_URL: undefined })).toThrow(/SVC_RUNTIME_CONTROL_PLANE_URL/);
    expect(() => loadConfig({ ...base, SVC_PROXY_HEARTBEAT_INTERVAL: "soon" })).toThrow(/SVC_PROXY_HEARTBEAT_INTERVAL/);
    expect(() => loadConfig({ ...base, SVC_PROXY_BUNDLE_VERSION: "3" })).toThrow(/SVC_PROXY_BUNDLE_VERSION/);
    expect(() => loadConfig({ ...base, SVC_PROXY_EGRESS_PROXY: "socks5://x" })).toThrow(/SVC_PROXY_EGRESS_PROXY/);
    expect(() => loadConfig({ ...base, SVC_PROXY_AUDIT: "relative/dir" })).toThrow(/SVC_PROXY_AUDIT/);
  });
});
