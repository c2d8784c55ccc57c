// Test fixtures for escrow recovery: an organization with a customer key, escrow on, and three
// stored records: one encrypted to the customer key only (before escrow), one to the customer
// key and escrow, one digest-only; and a second admin. Used by *.test.ts files only.
import { expect } from "bun:test";
import { Encrypter } from "age-encryption";
import { accountWithRole } from "../auth/test-fixtures.ts";
import { addInstallation, auditRecord, newRecipient } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";

export const ARGS = JSON.stringify({ customer: "ACME-4711", note: "confidential" });

export async function world() {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const customer = await newRecipient();
  const key = (await cp.call("POST", cp.org("/audit-encryption-keys"), { body: { name: "sec", public_key: customer.recipient } })).json;
  const before = auditRecord(inst, { args_digest: null, digest_key_id: null, recipient_key_ids: [key.id], ciphertext: await seal([customer.recipient]) });
  const settings = (await cp.call("PATCH", cp.org("/settings"), { body: { escrow_enabled: true } })).json;
  const escrowKeyId = ((await cp.call("GET", cp.org("/audit-encryption-keys"))).json.keys as { id: string; kind: string }[]).find((k) => k.kind === "escrow")!.id;
  const escrowed = auditRecord(inst, { args_digest: null, digest_key_id: null, recipient_key_ids: [key.id, escrowKeyId], ciphertext: await seal([customer.recipient, settings.escrow_recipient]) });
  const digestOnly = auditRecord(inst);
  const shipped = await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: [before, escrowed, digestOnly] } });
  expect(shipped.json.inserted).toBe(3);
  const second = await accountWithRole(cp, "admin", "second.admin@example.com");
  return { cp, escrowed, before, digestOnly, escrowKeyId, second };
}

async function seal(recipients: string[]): Promise<string> {
  const e = new Encrypter();
  for (const r of recipients) e.addRecipient(r);
  return Buffer.from(await e.encrypt(ARGS)).toString("base64");
}

