// The customer's audit identity: an age X25519 key pair made on the admin's machine. The file
// has the format `age-keygen` writes (comment lines, then AGE-SECRET-KEY-1…), so the `age`
// command-line tool reads it and `age-keygen` files work here. The private key never leaves
// the file: only the public key (age1…) is uploaded.
import { closeSync, fchmodSync, mkdirSync, openSync, statSync, writeSync } from "node:fs";
import { dirname } from "node:path";
import { Decrypter, armor, generateX25519Identity, identityToRecipient } from "age-encryption";
import { SECRET_FILE_MODE } from "../shared/config.ts";

export const SECRET_KEY_PREFIX = "AGE-SECRET-KEY-1";

export type AuditIdentity = { identity: string; recipient: string };

export async function generateAuditIdentity(): Promise<AuditIdentity> {
  const identity = await generateX25519Identity();
  return { identity, recipient: await identityToRecipient(identity) };
}

/** RFC 3339 to the second, as age-keygen writes it. */
function rfc3339(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** The file text `age-keygen` would write for this key pair. Pure. */
export function formatIdentityFile(id: AuditIdentity, created: Date): string {
  return `# created: ${rfc3339(created)}\n# public key: ${id.recipient}\n${id.identity}\n`;
}

/** The identities in an identity file (age's format: one per line, # comments, blank lines). Pure. */
export function parseIdentityFile(text: string): { ok: true; identities: string[] } | { ok: false; error: string } {
  const identities: string[] = [];
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (!line || line.startsWith("#")) continue;
    if (!line.startsWith(SECRET_KEY_PREFIX)) return { ok: false, error: `line ${i + 1} is not an age identity (expected ${SECRET_KEY_PREFIX}…)` };
    identities.push(line);
  }
  if (identities.length === 0) return { ok: false, error: `it holds no ${SECRET_KEY_PREFIX}… line` };
  return { ok: true, identities };
}

/**
 * Creates a new file only its owner can read (mode 0600), never replacing an existing one
 * (O_EXCL): false, and nothing written, when the path exists. A missing parent directory is
 * made 0700. Used for identity files and decrypted plaintext alike.
 */
export function writeNewPrivateFile(path: string, data: string | Uint8Array): boolean {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  let fd: number;
  try {
    fd = openSync(path, "wx", SECRET_FILE_MODE);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
    throw e;
  }
  try {
    fchmodSync(fd, SECRET_FILE_MODE);
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    let off = 0;
    while (off < bytes.length) off += writeSync(fd, bytes, off);
  } finally {
    closeSync(fd);
  }
  return true;
}

/** True when group or others may read the file: a private key should not be. */
export function isGroupOrWorldReadable(path: string): boolean {
  return (statSync(path).mode & 0o077) !== 0;
}

const ARMOR_HEADER = "-----BEGIN AGE ENCRYPTED FILE-----";

/** Decrypts a binary (or ASCII-armored) age file with any of the identities. */
export async function decryptAgeFile(ciphertext: Uint8Array, identities: readonly string[]): Promise<Uint8Array> {
  let bytes = ciphertext;
  const head = new TextDecoder().decode(bytes.subarray(0, ARMOR_HEADER.length + 4)).trimStart();
  if (head.startsWith(ARMOR_HEADER)) bytes = armor.decode(new TextDecoder().decode(bytes));
  const d = new Decrypter();
  for (const id of identities) d.addIdentity(id);
  return d.decrypt(bytes);
}
