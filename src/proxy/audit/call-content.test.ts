import { describe, expect, test } from "bun:test";
import { Decrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { argsDigest } from "./canonical.ts";
import { sealCallContent } from "./call-content.ts";

const digestKey = { id: "dk_TEST", key: new Uint8Array(32).fill(7) };

async function keypair(id: string) {
  const identity = await generateX25519Identity();
  return { identity, recipient: { key_id: id, recipient: await identityToRecipient(identity), kind: "customer" as const } };
}

async function open(ciphertext: string, identity: string) {
  const d = new Decrypter();
  d.addIdentity(identity);
  return JSON.parse(await d.decrypt(Buffer.from(ciphertext, "base64"), "text"));
}

describe("sealCallContent", () => {
  test("digest-only without recipients: digest and key id, no ciphertext", async () => {
    const s = await sealCallContent(digestKey, [], { q: "secret" }, "body");
    expect(s).toEqual({ args_digest: argsDigest(digestKey.key, { q: "secret" }), digest_key_id: "dk_TEST", recipient_key_ids: [], ciphertext: null });
  });

  test("one recipient: decrypts back to canonical {arguments, payload}", async () => {
    const a = await keypair("key_A");
    const s = await sealCallContent(digestKey, [a.recipient], { z: 1, a: "x" }, "print(1)");
    expect(s.recipient_key_ids).toEqual(["key_A"]);
    expect(s.args_digest).toBe(argsDigest(digestKey.key, { a: "x", z: 1 }));
    expect(await open(s.ciphertext!, a.identity)).toEqual({ arguments: { a: "x", z: 1 }, payload: "print(1)" });
    expect(Buffer.from(s.ciphertext!, "base64").subarray(0, 21).toString()).toBe("age-encryption.org/v1");
  });

  test("two recipients: each identity alone decrypts; a stranger cannot", async () => {
    const a = await keypair("key_A");
    const b = await keypair("key_B");
    const s = await sealCallContent(digestKey, [a.recipient, b.recipient], { n: 2 }, null);
    expect(s.recipient_key_ids).toEqual(["key_A", "key_B"]);
    expect(await open(s.ciphertext!, a.identity)).toEqual({ arguments: { n: 2 }, payload: null });
    expect(await open(s.ciphertext!, b.identity)).toEqual({ arguments: { n: 2 }, payload: null });
    const c = await keypair("key_C");
    await expect(open(s.ciphertext!, c.identity)).rejects.toThrow();
  });

  test("a recipient that is not an age X25519 key is refused: nothing is sealed (the decision fails closed)", async () => {
    const a = await keypair("key_A");
    const bad = { key_id: "key_B", recipient: "age1pq1notx25519", kind: "customer" as const };
    await expect(sealCallContent(digestKey, [a.recipient, bad], { n: 1 }, null)).rejects.toThrow(/not an age X25519 recipient/);
  });
});
