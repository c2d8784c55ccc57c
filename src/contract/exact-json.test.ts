// The audit digests and encrypts the arguments the caller sent, not what a double makes of them.
import { describe, expect, test } from "bun:test";
import { Decrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { argsDigest, canonicalJson } from "../proxy/audit/canonical.ts";
import { sealCallContent } from "../proxy/audit/call-content.ts";
import { canonicalNumber, JsonNumber, NonFiniteNumber, parseExactJson } from "./exact-json.ts";

const digestKey = { id: "dk_TEST", key: new Uint8Array(32).fill(7) };

describe("canonicalNumber", () => {
  test("numbers a double holds: the same text as ECMAScript's (the digests they always had)", () => {
    for (const s of ["0", "-0", "1", "-1.5", "0.1", "1e21", "1e22", "123e-20", "1e-7", "0.000001", "5e-324", "1.7976931348623157e308", "1E2", "1.50", "9007199254740992"]) {
      expect(canonicalNumber(s)).toBe(JSON.stringify(JSON.parse(s)));
    }
  });

  test("numbers a double does not hold: their exact value, in the same layout", () => {
    expect(canonicalNumber("9007199254740993")).toBe("9007199254740993");
    expect(canonicalNumber("-18446744073709551615")).toBe("-18446744073709551615");
    expect(canonicalNumber("1.0000000000000001")).toBe("1.0000000000000001");
    expect(canonicalNumber("123456789012345678901234567890")).toBe("1.2345678901234567890123456789e+29");
    expect(canonicalNumber("0.10000000000000000000000000001000")).toBe("0.10000000000000000000000000001");
    expect(canonicalNumber("1e-400")).toBe("1e-400");
  });
});

describe("parseExactJson", () => {
  test("64-bit integers and long decimals are kept exactly; everything else is JSON.parse's", () => {
    const v = parseExactJson('{"id": 18446744073709551615, "n": 9007199254740993, "small": 42, "pi": 3.14159265358979323846, "s": "12345678901234567890"}') as Record<string, unknown>;
    expect(v.id).toEqual(new JsonNumber("18446744073709551615"));
    expect(v.n).toEqual(new JsonNumber("9007199254740993"));
    expect(v.small).toBe(42);
    expect(v.pi).toEqual(new JsonNumber("3.14159265358979323846"));
    expect(v.s).toBe("12345678901234567890");
  });

  test("a number out of a double's range is refused", () => {
    expect(() => parseExactJson('{"a": 1e999}')).toThrow(NonFiniteNumber);
    expect(() => parseExactJson('{"a": [-1E+400]}')).toThrow(NonFiniteNumber);
  });

  test("malformed JSON is still a SyntaxError", () => {
    expect(() => parseExactJson('{"a": 12345678901234567890')).toThrow(SyntaxError);
  });
});

describe("digest and ciphertext of exact arguments", () => {
  test("two arguments a double cannot tell apart have different digests", () => {
    const a = parseExactJson('{"account": 9007199254740993}');
    const b = parseExactJson('{"account": 9007199254740992}');
    expect(canonicalJson(a)).toBe('{"account":9007199254740993}');
    expect(argsDigest(digestKey.key, a)).not.toBe(argsDigest(digestKey.key, b));
    // ordinary arguments keep the digest they had before exact parsing
    expect(argsDigest(digestKey.key, parseExactJson('{"b": 1.5, "a": 2}'))).toBe(argsDigest(digestKey.key, { a: 2, b: 1.5 }));
  });

  test("the sealed content carries the caller's exact numbers", async () => {
    const identity = await generateX25519Identity();
    const recipient = { key_id: "key_A", recipient: await identityToRecipient(identity), kind: "customer" as const };
    const args = parseExactJson('{"id": 18446744073709551615, "amount": 0.1000000000000000055511151231257827}');
    const s = await sealCallContent(digestKey, [recipient], args, null);
    const d = new Decrypter();
    d.addIdentity(identity);
    expect(await d.decrypt(Buffer.from(s.ciphertext!, "base64"), "text")).toBe('{"arguments":{"amount":0.1000000000000000055511151231257827,"id":18446744073709551615},"payload":null}');
    expect(s.args_digest).toBe(argsDigest(digestKey.key, args));
  });
});
