import { describe, expect, test } from "bun:test";
import { SvcError } from "../../contract/errors.ts";
import { checkOutboundUrl, nonPublicReason } from "./outbound.ts";

const resolvesTo =
  (...addresses: string[]) =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(":") ? 6 : 4 }));

async function codeOf(p: Promise<unknown>): Promise<string | null> {
  try {
    await p;
    return null;
  } catch (e) {
    return e instanceof SvcError ? `${e.code}: ${e.message}` : String(e);
  }
}

describe("nonPublicReason", () => {
  test("refuses loopback, private, link-local, CGNAT, unique-local, unspecified and their IPv6 forms", () => {
    for (const a of [
      "127.0.0.1",
      "127.9.9.9",
      "10.1.2.3",
      "172.16.0.1",
      "172.31.255.255",
      "192.168.1.1",
      "169.254.169.254",
      "100.64.0.1",
      "100.127.255.255",
      "0.0.0.0",
      "224.0.0.1",
      "255.255.255.255",
      "::",
      "::1",
      "fc00::1",
      "fd12:3456::1",
      "fe80::1",
      "fe80::1%eth0",
      "ff02::1",
      "::ffff:127.0.0.1",
      "::ffff:169.254.169.254",
      "::ffff:7f00:1",
      "64:ff9b::a9fe:a9fe",
      "::10.0.0.1",
    ]) {
      expect([a, nonPublicReason(a)]).not.toEqual([a, null]);
    }
  });
  test("accepts public addresses", () => {
    for (const a of ["20.190.160.1", "8.8.8.8", "100.63.255.255", "100.128.0.1", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8", "2001:db8::1"]) {
      expect([a, nonPublicReason(a)]).toEqual([a, null]);
    }
  });
});

describe("checkOutboundUrl", () => {
  const o = { what: "authority_url", allowPrivate: false, stage: "fetch" as const };
  test("IP literals: refused when not public, with a message naming the setting", async () => {
    expect(await codeOf(checkOutboundUrl("https://169.254.169.254/latest/meta-data", o))).toContain("outbound_url_refused: authority_url https://169.254.169.254 is a link-local address");
    expect(await codeOf(checkOutboundUrl("https://[::1]:8443/", o))).toStartWith("outbound_url_refused");
    expect(await codeOf(checkOutboundUrl("https://2130706433/", o))).toStartWith("outbound_url_refused"); // 127.0.0.1 in decimal
    expect(await codeOf(checkOutboundUrl("https://[::ffff:10.0.0.1]/", o))).toStartWith("outbound_url_refused");
    expect(await codeOf(checkOutboundUrl("https://8.8.8.8/", o))).toBeNull();
  });
  test("names: every resolved address must be public", async () => {
    expect(await codeOf(checkOutboundUrl("https://login.example.com", { ...o, lookup: resolvesTo("20.190.160.1") }))).toBeNull();
    const mixed = await codeOf(checkOutboundUrl("https://login.example.com", { ...o, lookup: resolvesTo("20.190.160.1", "10.0.0.5") }));
    expect(mixed).toContain("resolves to 10.0.0.5, a private address");
    expect(await codeOf(checkOutboundUrl("https://evil.example", { ...o, lookup: resolvesTo("fd00::1") }))).toContain("unique-local");
    expect(await codeOf(checkOutboundUrl("https://localhost:9000", o))).toContain("loopback");
  });
  test("an unresolvable name passes at save time and is refused at fetch time", async () => {
    const failing = async () => {
      throw new Error("getaddrinfo ENOTFOUND");
    };
    expect(await codeOf(checkOutboundUrl("https://nowhere.invalid", { ...o, stage: "save", lookup: failing }))).toBeNull();
    expect(await codeOf(checkOutboundUrl("https://nowhere.invalid", { ...o, lookup: failing }))).toContain("could not be resolved");
  });
  test("allowLoopback (the demo's SIEM sinks) lets loopback through and nothing else non-public", async () => {
    const lo = { ...o, allowLoopback: true };
    expect(await codeOf(checkOutboundUrl("http://127.0.0.1:9000/hec", lo))).toBeNull();
    expect(await codeOf(checkOutboundUrl("http://[::1]:9000/hec", lo))).toBeNull();
    expect(await codeOf(checkOutboundUrl("http://localhost:9000/hec", lo))).toBeNull();
    expect(await codeOf(checkOutboundUrl("https://169.254.169.254/latest/meta-data", lo))).toContain("link-local");
    expect(await codeOf(checkOutboundUrl("https://10.0.0.1/", lo))).toContain("private");
    expect(await codeOf(checkOutboundUrl("https://[::ffff:10.0.0.1]/", lo))).toStartWith("outbound_url_refused");
    expect(await codeOf(checkOutboundUrl("https://[fd00::1]/", lo))).toContain("unique-local");
    // a name that resolves to loopback and a private address is still refused
    expect(await codeOf(checkOutboundUrl("https://mixed.example", { ...lo, lookup: resolvesTo("127.0.0.1", "10.0.0.5") }))).toContain("10.0.0.5, a private address");
  });
  test("the operator setting allows everything", async () => {
    expect(await codeOf(checkOutboundUrl("http://127.0.0.1:9000", { ...o, allowPrivate: true }))).toBeNull();
  });
});
