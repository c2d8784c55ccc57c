import { expect, test } from "bun:test";
import { Decrypter } from "age-encryption";
import { generateAuditIdentity } from "../audit/identity.ts";
import { apiKeyFromStdinText, sealApiKey, usableRecipients } from "./sealing.ts";

test("the key is sealed so that every replica's identity opens it, and only the ciphertext leaves", async () => {
  const r1 = await generateAuditIdentity();
  const r2 = await generateAuditIdentity();
  const sealed = await sealApiKey("sk-live-123", [
    { replica_id: "rep_1", installation_id: "inst_1", recipient: r1.recipient },
    { replica_id: "rep_2", installation_id: "inst_1", recipient: r2.recipient },
  ]);
  expect(sealed.sealed_to).toEqual(["rep_1", "rep_2"]);
  expect(sealed.api_key_sealed).not.toContain("sk-live");
  const bytes = Buffer.from(sealed.api_key_sealed, "base64");
  expect(bytes.subarray(0, 21).toString()).toBe("age-encryption.org/v1");
  for (const id of [r1, r2]) {
    const d = new Decrypter();
    d.addIdentity(id.identity);
    expect(await d.decrypt(bytes, "text")).toBe("sk-live-123");
  }
});

test("malformed and duplicate recipients are dropped", async () => {
  const r = await generateAuditIdentity();
  const list = usableRecipients([
    { replica_id: "rep_1", installation_id: "i", recipient: r.recipient },
    { replica_id: "rep_1", installation_id: "i", recipient: r.recipient },
    { replica_id: "rep_2", installation_id: "i", recipient: "age1notakey" },
  ]);
  expect(list.map((x) => x.replica_id)).toEqual(["rep_1"]);
});

test("the key on stdin is one line", () => {
  expect(apiKeyFromStdinText("  sk-abc\n")).toBe("sk-abc");
  expect(apiKeyFromStdinText("\n")).toBeNull();
  expect(apiKeyFromStdinText("a\nb")).toBeNull();
});
