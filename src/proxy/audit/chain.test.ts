import { expect, test } from "bun:test";
import type { AuditRecord } from "../../contract/audit.ts";
import { ciphertextDigest, recordHash } from "../../contract/audit-chain.ts";
import { auditRecordProblem } from "../../contract/audit-check.ts";
import { fakeRecord } from "../testing/records.ts";
import { AuditChain, chainedLine } from "./chain.ts";

const record = (o: Partial<AuditRecord> = {}): AuditRecord =>
  fakeRecord({ recipient_key_ids: ["key_1"], args_digest: null, digest_key_id: null, ciphertext: Buffer.from("age-encryption.org/v1 fake").toString("base64"), ...o });

test("records are numbered from 1 and each names the hash of the one before; the contract accepts them", () => {
  const chain = new AuditChain();
  const [a, b, c] = [record(), record({ decision: "deny" }), record()].map((r) => chain.stamp(r));
  expect([a!.chain_seq, b!.chain_seq, c!.chain_seq]).toEqual([1, 2, 3]);
  expect(a!.chain_prev).toBeNull();
  expect(b!.chain_prev).toBe(recordHash(a!, ciphertextDigest(a!.ciphertext)));
  expect(c!.chain_prev).toBe(recordHash(b!, ciphertextDigest(b!.ciphertext)));
  expect(new Set([a!.chain_id, b!.chain_id, c!.chain_id])).toEqual(new Set([chain.id]));
  for (const r of [a, b, c]) expect(auditRecordProblem(r)).toBeNull();
});

test("the hash covers every field and the ciphertext, not later additions; a new chain per process", () => {
  const r = new AuditChain().stamp(record());
  const h = recordHash(r, ciphertextDigest(r.ciphertext));
  expect(recordHash({ ...r, reason: "other" }, ciphertextDigest(r.ciphertext))).not.toBe(h);
  expect(recordHash({ ...r, subject: { ...r.subject, via_installation: !r.subject.via_installation } }, ciphertextDigest(r.ciphertext))).not.toBe(h);
  expect(recordHash(r, ciphertextDigest(Buffer.from("other").toString("base64")))).not.toBe(h);
  expect(recordHash({ ...r, chain_seq: 2 }, ciphertextDigest(r.ciphertext))).not.toBe(h);
  // A field the chain form does not name (added to records later) leaves the hash alone.
  expect(recordHash({ ...r, added_later: "x" } as unknown as AuditRecord, ciphertextDigest(r.ciphertext))).toBe(h);
  expect(recordHash({ ...r, shadow: { decision: "deny", policy_id: "pol_1", reason: "policy" } }, ciphertextDigest(r.ciphertext))).not.toBe(h);
  // The store's null for an absent optional field hashes like the absence.
  expect(recordHash({ ...r, model: null, ref: null }, ciphertextDigest(r.ciphertext))).toBe(h);
  expect(new AuditChain().id).not.toBe(new AuditChain().id);
});

test("the spooled line built from the unstamped text is exactly the stamped record's JSON (first and later links)", () => {
  const chain = new AuditChain();
  for (const r of [record(), record({ tool_name: 'a"b', ciphertext: null, args_digest: `hmac-sha256:${"1".repeat(64)}` })]) {
    const unchained = JSON.stringify(r);
    chain.stamp(r);
    expect(chainedLine(unchained, r)).toBe(JSON.stringify(r));
  }
});
