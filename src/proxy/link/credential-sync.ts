// The replica's credential-sync identity: an age X25519 identity generated once in the state
// directory (mode 0600). Its recipient is registered at bootstrap; model-profile API keys
// arrive sealed to it and are unsealed only in memory, just before a model call.
import { Decrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileDurably } from "../durable-file.ts";

export const IDENTITY_FILE = "credential-sync.key";

export type CredentialSync = {
  recipient: string;
  /** Decrypts a sealed API key (base64 of a binary age file). */
  unseal(sealedBase64: string): Promise<string>;
  /** Decrypts a short-lived sealed value (a user's OAuth access token), kept by no cache here. */
  open(sealedBase64: string): Promise<string>;
  /** Decrypts once, caching nothing: for a key that is imported at once and kept only in that form (the identity-assertion key). */
  openBytes(sealedBase64: string): Promise<Uint8Array>;
};

export async function loadOrCreateIdentity(stateDir: string): Promise<string> {
  const path = join(stateDir, IDENTITY_FILE);
  if (existsSync(path)) {
    const text = readFileSync(path, "utf8").trim();
    if (!text.startsWith("AGE-SECRET-KEY-1")) throw new Error(`${path} does not hold an age X25519 identity; remove it to generate a new one`);
    return text;
  }
  const identity = await generateX25519Identity();
  writeFileDurably(path, `${identity}\n`, 0o600);
  return identity;
}

export async function credentialSync(identity: string): Promise<CredentialSync> {
  const recipient = await identityToRecipient(identity);
  const cache = new Map<string, string>();
  return {
    recipient,
    async open(sealed) {
      const d = new Decrypter();
      d.addIdentity(identity);
      return (await d.decrypt(Buffer.from(sealed, "base64"), "text")).trim();
    },
    async unseal(sealed) {
      const hit = cache.get(sealed);
      if (hit !== undefined) return hit;
      const d = new Decrypter();
      d.addIdentity(identity);
      const key = (await d.decrypt(Buffer.from(sealed, "base64"), "text")).trim();
      cache.clear(); // one profile at a time: keep only the current key
      cache.set(sealed, key);
      return key;
    },
    async openBytes(sealed) {
      const d = new Decrypter();
      d.addIdentity(identity);
      return d.decrypt(Buffer.from(sealed, "base64"));
    },
  };
}
