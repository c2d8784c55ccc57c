import { describe, expect, test } from "bun:test";
import { bypassesProxy, egressProxyFor, parseNoProxy, redactUrlCredentials } from "./egress.ts";

describe("NO_PROXY", () => {
  const list = parseNoProxy(" metadata.google.internal, .corp.example ,cp.example.com:8443,10.0.0.5,*.svc.local, 169.254.169.254, [fd00::1]:8443, ::2, [FD00:0:0::3]");
  test("parsing trims, lower-cases, drops empty entries", () => {
    expect(parseNoProxy(" A.example ,, b:1 ,")).toEqual(["a.example", "b:1"]);
    expect(parseNoProxy(undefined)).toEqual([]);
  });
  test("exact host, dot suffix, *. suffix, port, IPv4", () => {
    expect(bypassesProxy("http://metadata.google.internal/x", list)).toBe(true);
    expect(bypassesProxy("https://a.b.corp.example/", list)).toBe(true);
    expect(bypassesProxy("https://corp.example/", list)).toBe(true);
    expect(bypassesProxy("https://cp.example.com:8443/", list)).toBe(true);
    expect(bypassesProxy("https://cp.example.com/", list)).toBe(false);
    expect(bypassesProxy("http://10.0.0.5:9000/", list)).toBe(true);
    expect(bypassesProxy("http://169.254.169.254/latest", list)).toBe(true);
    expect(bypassesProxy("https://api.svc.local/", list)).toBe(true);
    expect(bypassesProxy("https://evilcorp.example/", list)).toBe(false);
    expect(bypassesProxy("https://other.example/", list)).toBe(false);
    expect(bypassesProxy("https://10.0.0.50/", list)).toBe(false);
  });
  test("IPv6, bare or bracketed, with or without a port", () => {
    expect(bypassesProxy("https://[fd00::1]:8443/", list)).toBe(true);
    expect(bypassesProxy("https://[fd00::1]/", list)).toBe(false); // port 443 ≠ 8443
    expect(bypassesProxy("http://[::2]/", list)).toBe(true);
    expect(bypassesProxy("http://[fd00::3]:1/", list)).toBe(true); // written uncompressed in the list
    expect(bypassesProxy("http://[fd00::4]/", list)).toBe(false);
  });
  test("CIDR blocks match addresses inside them, IPv4 and IPv6, not names", () => {
    const list = parseNoProxy("10.0.0.0/8, 192.168.1.0/24, fd00::/8, [2001:db8::]/32, 203.0.113.7/32");
    for (const url of ["https://10.1.2.3/", "http://192.168.1.200:8420/", "https://[fd12:3456::1]/", "https://[2001:db8:0:1::5]:8443/", "https://203.0.113.7/", "https://[::ffff:10.0.0.1]/"]) {
      expect([url, bypassesProxy(url, list)]).toEqual([url, url !== "https://[::ffff:10.0.0.1]/"]);
    }
    for (const url of ["https://11.0.0.1/", "http://192.168.2.1/", "https://[fe80::1]/", "https://[2001:db9::1]/", "https://203.0.113.8/", "https://ten.example/"]) {
      expect([url, bypassesProxy(url, list)]).toEqual([url, false]);
    }
    expect(bypassesProxy("https://0a.example/", parseNoProxy("10.0.0.0/33"))).toBe(false); // not a block: read as a host name
    expect(bypassesProxy("https://[::ffff:10.0.0.1]/", parseNoProxy("::ffff:0:0/96"))).toBe(true);
  });

  test("a port applies to that port only; default ports count", () => {
    const l = parseNoProxy("svc.local:8443, plain.local:443");
    expect(bypassesProxy(new URL("https://svc.local:8443"), l)).toBe(true);
    expect(bypassesProxy(new URL("https://svc.local"), l)).toBe(false);
    expect(bypassesProxy(new URL("https://plain.local"), l)).toBe(true);
    expect(bypassesProxy(new URL("http://plain.local"), l)).toBe(false);
  });
  test("bare host matches subdomains; * matches everything; empty matches nothing; trailing dots ignored", () => {
    expect(bypassesProxy("https://x.metadata.google.internal/", list)).toBe(true);
    expect(bypassesProxy("https://anything/", ["*"])).toBe(true);
    expect(bypassesProxy("https://anything/", parseNoProxy(""))).toBe(false);
    expect(bypassesProxy("https://cp.example.org./", parseNoProxy("example.org."))).toBe(true);
  });
  test("egressProxyFor: the proxy unless the host bypasses it", () => {
    expect(egressProxyFor("https://cp.example.com/", "http://proxy:3128", list)).toBe("http://proxy:3128");
    expect(egressProxyFor("https://a.corp.example/", "http://proxy:3128", list)).toBeNull();
    expect(egressProxyFor("https://cp.example.com/", null, list)).toBeNull();
  });
});

describe("redactUrlCredentials", () => {
  test("the password becomes ***, the user stays", () => {
    expect(redactUrlCredentials("http://alice:s3cret@proxy.corp:3128")).toBe("http://alice:***@proxy.corp:3128");
    expect(redactUrlCredentials('SVC_PROXY_EGRESS_PROXY "socks5://bob:pa:ss@p:1080" is not an http(s) proxy URL')).toBe('SVC_PROXY_EGRESS_PROXY "socks5://bob:***@p:1080" is not an http(s) proxy URL');
  });
  test("an unencoded @ in the password is redacted up to the host", () => {
    expect(redactUrlCredentials("http://u:p@ss@proxy:3128/x")).toBe("http://u:***@proxy:3128/x");
  });
  test("several URLs; text and URLs without a password are unchanged", () => {
    expect(redactUrlCredentials("via http://a:1@p1:3128, to https://b:2@cp.example.com/api")).toBe("via http://a:***@p1:3128, to https://b:***@cp.example.com/api");
    for (const same of ["http://proxy:3128", "http://user@proxy:3128", "https://cp.example.com:8443/x?y=1", "mail alice@example.com at http://h:80", "no url here"]) {
      expect(redactUrlCredentials(same)).toBe(same);
    }
  });
});
