import { describe, expect, test } from "bun:test";
import { bypasses, egressFromEnv, proxyFor, viaEgress } from "./egress.ts";

describe("egress", () => {
  const egress = egressFromEnv({ SVC_PROXY_EGRESS_PROXY: "http://proxy.corp:3128", SVC_PROXY_NO_PROXY: "169.254.169.254, .internal.example, svc.local:8443" });
  test("the egress proxy is used unless the host is listed", () => {
    expect(proxyFor(new URL("https://svc.example.com"), egress)).toBe("http://proxy.corp:3128");
    expect(proxyFor(new URL("http://169.254.169.254/latest"), egress)).toBeUndefined();
    expect(proxyFor(new URL("https://cp.internal.example"), egress)).toBeUndefined();
    expect(proxyFor(new URL("https://svc.local:8443"), egress)).toBeUndefined();
    expect(proxyFor(new URL("https://svc.local"), egress)).toBe("http://proxy.corp:3128");
    expect(bypasses(new URL("https://a.b"), ["*"])).toBe(true);
    expect(proxyFor(new URL("https://svc.example.com"), egressFromEnv({}))).toBeUndefined();
  });
});

describe("viaEgress", () => {
  test("names the egress proxy with its password redacted, or nothing for a direct call", () => {
    expect(viaEgress("http://alice:s3cret@proxy.corp:3128")).toBe(" through the egress proxy http://alice:***@proxy.corp:3128");
    expect(viaEgress(null)).toBe("");
    expect(viaEgress(undefined)).toBe("");
  });
});
