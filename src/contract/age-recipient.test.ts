import { expect, test } from "bun:test";
import { generateX25519Identity, identityToRecipient } from "age-encryption";
import { bech32 } from "@scure/base";
import { isLowOrderX25519, isX25519Recipient, recipientProblem, x25519RecipientKey } from "./age-recipient.ts";

/** The u-coordinates of Curve25519's points of small order, canonical and not (RFC 7748 §7, libsodium's blocklist). */
const LOW_ORDER_POINTS = [
  "0000000000000000000000000000000000000000000000000000000000000000",
  "0100000000000000000000000000000000000000000000000000000000000000",
  "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
  "5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
  "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
  "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
];
const lowOrderRecipient = (hex: string) => bech32.encode("age", bech32.toWords(Buffer.from(hex, "hex")));

test("an age X25519 recipient yields its 32-byte key", async () => {
  const recipient = await identityToRecipient(await generateX25519Identity());
  expect(x25519RecipientKey(recipient)?.length).toBe(32);
  expect(isX25519Recipient(recipient)).toBe(true);
  expect(recipientProblem(recipient)).toBeNull();
});

test("anything else is refused with a reason", async () => {
  const good = await identityToRecipient(await generateX25519Identity());
  const badChecksum = good.slice(0, -1) + (good.endsWith("q") ? "p" : "q");
  for (const s of [badChecksum, "age1", "ssh-ed25519 AAAA", "AGE-SECRET-KEY-1ABC", `age1${"q".repeat(40)}`]) {
    expect(x25519RecipientKey(s)).toBeNull();
    expect(recipientProblem(s)).not.toBeNull();
  }
  expect(recipientProblem("ssh-ed25519 AAAA")).toContain('start with "age1"');
  expect(recipientProblem(badChecksum)).toContain("does not parse");
});

test("a low-order point parses as a recipient but is refused, saying why", async () => {
  for (const hex of LOW_ORDER_POINTS) {
    const r = lowOrderRecipient(hex);
    expect(isX25519Recipient(r)).toBe(true);
    expect(isLowOrderX25519(x25519RecipientKey(r)!)).toBe(true);
    expect(recipientProblem(r)).toContain("low-order X25519 point");
  }
  const good = x25519RecipientKey(await identityToRecipient(await generateX25519Identity()))!;
  expect(isLowOrderX25519(good)).toBe(false);
});
