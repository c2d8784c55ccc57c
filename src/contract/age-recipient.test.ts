import { expect, test } from "bun:test";
import { generateX25519Identity, identityToRecipient } from "age-encryption";
import { isX25519Recipient, recipientProblem, x25519RecipientKey } from "./age-recipient.ts";

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
