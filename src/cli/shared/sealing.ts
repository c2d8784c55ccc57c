// Sealing a model provider's API key on the admin's machine, so the control plane only ever
// stores ciphertext: one age file encrypted to the credential-sync key (X25519) of every
// runtime replica of the scope. Each runtime opens it with its own identity.
import type { RuntimeRecipient } from "../../contract/admin-api.ts";
import { Encrypter } from "age-encryption";
import { isX25519Recipient } from "../../contract/age-recipient.ts";

/** A runtime replica able to receive a sealed key (GET /organizations/{org}/runtime-recipients). */
export type { RuntimeRecipient } from "../../contract/admin-api.ts";
export type SealedKey = { api_key_sealed: string; sealed_to: string[] };

/** The recipients that are well-formed X25519 keys, one per replica. Pure. */
export function usableRecipients(recipients: readonly RuntimeRecipient[]): RuntimeRecipient[] {
  const seen = new Set<string>();
  return recipients.filter((r) => {
    if (!isX25519Recipient(r.recipient) || seen.has(r.replica_id)) return false;
    seen.add(r.replica_id);
    return true;
  });
}

export async function sealApiKey(apiKey: string, recipients: readonly RuntimeRecipient[]): Promise<SealedKey> {
  if (recipients.length === 0) throw new Error("no recipient to seal to");
  const e = new Encrypter();
  for (const r of recipients) e.addRecipient(r.recipient);
  const sealed = await e.encrypt(apiKey);
  return { api_key_sealed: Buffer.from(sealed).toString("base64"), sealed_to: recipients.map((r) => r.replica_id) };
}

/** Reads the API key from piped stdin: one line, surrounding whitespace removed. */
export function apiKeyFromStdinText(text: string): string | null {
  const key = text.replace(/^\s+|\s+$/g, "");
  if (!key || /[\r\n]/.test(key)) return null;
  return key;
}
