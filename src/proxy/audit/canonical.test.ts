import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { argsDigest, canonicalJson } from "./canonical.ts";

describe("canonicalJson", () => {
  test("sorts keys at every depth and drops whitespace", () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: true, y: null }], c: "x" } })).toBe('{"a":{"c":"x","d":[1,{"y":null,"z":true}]},"b":1}');
  });
  test("RFC 8785 vectors: numbers, escapes, key order by code unit", () => {
    expect(canonicalJson({ numbers: [333333333.33333329, 1e30, 4.5, 0.002, 1e-27] })).toBe('{"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27]}');
    expect(canonicalJson({ string: '€$\u000f\nA\'B"\\\\"/' })).toBe('{"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}');
    expect(canonicalJson({ "\u20ac": 1, "\r": 2, "1": 3, "\u0080": 4, "\ud83d\ude00": 5, "\ufb33": 6 })).toBe('{"\\r":2,"1":3,"\u0080":4,"\u20ac":1,"\ud83d\ude00":5,"\ufb33":6}');
    expect(canonicalJson({ literals: [null, true, false] })).toBe('{"literals":[null,true,false]}');
  });
  test("omits undefined members like JSON.stringify, refuses NaN", () => {
    expect(canonicalJson({ a: undefined, b: [undefined] })).toBe('{"b":[null]}');
    expect(() => canonicalJson({ a: Number.NaN })).toThrow();
  });
});

describe("argsDigest", () => {
  const key = new TextEncoder().encode("0123456789abcdef0123456789abcdef");
  test("is HMAC-SHA-256 over the canonical JSON, hex, prefixed", () => {
    const expected = createHmac("sha256", key).update('{"a":1,"b":[true,"x"]}').digest("hex");
    expect(argsDigest(key, { b: [true, "x"], a: 1 })).toBe(`hmac-sha256:${expected}`);
    // text beyond ASCII is digested as UTF-8
    expect(argsDigest(key, { q: "Müller €😀" })).toBe(`hmac-sha256:${createHmac("sha256", key).update('{"q":"Müller €😀"}', "utf8").digest("hex")}`);
  });
  test("known vector", () => {
    // echo -n '{}' | openssl dgst -sha256 -hmac key
    expect(argsDigest(new TextEncoder().encode("key"), {})).toBe("hmac-sha256:a777724d943eb48dc69bca8a4a6d57a04db3f9ec7e1de4e581e860265bdf3032");
  });
  test("key order does not change the digest; values do", () => {
    expect(argsDigest(key, { x: 1, y: 2 })).toBe(argsDigest(key, { y: 2, x: 1 }));
    expect(argsDigest(key, { x: 1, y: 2 })).not.toBe(argsDigest(key, { x: 1, y: 3 }));
    expect(argsDigest(key, { x: 1 })).toMatch(/^hmac-sha256:[0-9a-f]{64}$/);
  });
});
