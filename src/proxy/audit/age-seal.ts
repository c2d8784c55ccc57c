// age v1 encryption to X25519 recipients (https://age-encryption.org/v1) with native
// primitives: X25519 (ephemeral key and key agreement), HKDF-SHA-256 and HMAC-SHA-256 come from
// node:crypto. `age-encryption`'s Encrypter spends ~0.45-0.7 ms of CPU on a two-recipient
// audit record; this takes ~0.15-0.25 ms, most of it the four X25519 scalar multiplications.
// ChaCha20-Poly1305 is RFC 8439 composed from @noble/ciphers' chacha20 and poly1305 (the
// primitives under age-encryption's own AEAD): Bun's node:crypto has no "chacha20-poly1305"
// cipher and WebCrypto has none; composing them directly skips noble's wrapper (~3x faster
// for the 16-byte file key). The output is the binary age v1 file as `age` and age-encryption
// write it. Decryption and key generation stay with the age-encryption package.
// `_poly1305.js` is an export noble lists but names as internal: @noble/ciphers is pinned to an
// exact version, and age-seal.test.ts compares this seal with noble's public chacha20poly1305 on
// random inputs, so an upgrade that changes it fails there first.
import { x25519RecipientKey } from "../../contract/age-recipient.ts";
import { poly1305 } from "@noble/ciphers/_poly1305.js";
import { chacha20 } from "@noble/ciphers/chacha.js";
import { createHmac, createPublicKey, diffieHellman, generateKeyPairSync, hkdfSync, type KeyObject, randomBytes } from "node:crypto";

const VERSION_LINE = "age-encryption.org/v1\n";
const X25519_LABEL = "age-encryption.org/v1/X25519";
const CHUNK = 64 * 1024;
/** DER SubjectPublicKeyInfo prefix of an X25519 public key; the raw 32 bytes follow. */
const SPKI_X25519 = Buffer.from("302a300506032b656e032100", "hex");
const ZERO_NONCE = new Uint8Array(12);
const ZERO_BLOCK = new Uint8Array(32);

type Recipient = { raw: Buffer; key: KeyObject };
const parsed = new Map<string, Recipient>();
const PARSED_MAX = 256;

const b64 = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("base64").replace(/=+$/, "");
const hkdf = (ikm: Uint8Array, salt: Uint8Array, info: string) => new Uint8Array(hkdfSync("sha256", ikm, salt, info, 32));

/** The 32-byte X25519 public key of an "age1…" recipient; throws for anything else (plugins, post-quantum, bad checksums). */
export function x25519RecipientBytes(recipient: string): Uint8Array {
  return new Uint8Array(recipientKey(recipient).raw);
}

function recipientKey(recipient: string): Recipient {
  const hit = parsed.get(recipient);
  if (hit) return hit;
  const raw = x25519RecipientKey(recipient);
  if (!raw) throw new Error(`not an age X25519 recipient: "${recipient.slice(0, 12)}…"`);
  const buf = Buffer.from(raw);
  const r = { raw: buf, key: createPublicKey({ key: Buffer.concat([SPKI_X25519, buf]), format: "der", type: "spki" }) };
  if (parsed.size >= PARSED_MAX) parsed.delete(parsed.keys().next().value!);
  parsed.set(recipient, r);
  return r;
}

/**
 * One stanza key per recipient from `source` (made off the event loop), waiting for it when
 * none is ready; each recipient is checked first, so a bad one fails as inline sealing does.
 */
export async function stanzaKeys(recipients: readonly string[], source: StanzaKeySource): Promise<StanzaKey[]> {
  for (const r of recipients) recipientKey(r);
  return Promise.all(recipients.map(async (r) => source.next(r)));
}

/** ChaCha20-Poly1305 (RFC 8439 §2.8) without associated data: ciphertext || 16-byte tag. */
export function chachaPolySeal(key: Uint8Array, nonce: Uint8Array, plain: Uint8Array): Uint8Array {
  const n = plain.length;
  const pad = (16 - (n % 16)) % 16;
  // The MAC input is ciphertext || pad16 || le64(aad length = 0) || le64(ciphertext length);
  // the ciphertext is written straight into it.
  const macIn = new Uint8Array(n + pad + 16);
  if (n > 0) chacha20(key, nonce, plain, macIn.subarray(0, n), 1);
  const view = new DataView(macIn.buffer);
  view.setUint32(n + pad + 8, n >>> 0, true);
  view.setUint32(n + pad + 12, Math.floor(n / 2 ** 32), true);
  const out = new Uint8Array(n + 16);
  out.set(macIn.subarray(0, n));
  out.set(poly1305(macIn, chacha20(key, nonce, ZERO_BLOCK)), n);
  return out;
}

/** What one X25519 stanza needs besides the file key: the ephemeral share and the wrap key. */
export type StanzaKey = { share: Uint8Array; wrapKey: Uint8Array };
/** Stanza keys made off the event loop (stanza-pool.ts): one per call, never used twice. */
export type StanzaKeySource = { next(recipient: string): Promise<StanzaKey> };

/** Stanza keys made on the calling thread (the event loop, in the proxy): tests and status read it. */
export const sealCounters = { inlineStanzaKeys: 0 };

/** A stanza key made here, on the calling thread: what sealing does without a source. */
export function inlineStanzaKey(recipient: string): StanzaKey {
  return stanzaKey(recipientKey(recipient));
}

/** A fresh ephemeral key and its key agreement with the recipient: the costly part of a stanza. */
function stanzaKey(r: Recipient): StanzaKey {
  sealCounters.inlineStanzaKeys++;
  const eph = generateKeyPairSync("x25519");
  const share = (eph.publicKey.export({ format: "der", type: "spki" }) as Buffer).subarray(SPKI_X25519.length);
  let shared: Buffer;
  try {
    shared = diffieHellman({ privateKey: eph.privateKey, publicKey: r.key });
  } catch {
    throw new Error("X25519 key agreement failed: the recipient is a low-order point");
  }
  if (shared.every((b) => b === 0)) throw new Error("X25519 key agreement failed: all-zero shared secret");
  return { share, wrapKey: hkdf(shared, Buffer.concat([share, r.raw]), X25519_LABEL) };
}

/** One "-> X25519" stanza: the file key wrapped under a (fresh, used once) stanza key. */
function x25519Stanza(fileKey: Uint8Array, k: StanzaKey): string {
  return `-> X25519 ${b64(k.share)}\n${bodyLines(chachaPolySeal(k.wrapKey, ZERO_NONCE, fileKey))}`;
}

/** Stanza body: base64 without padding in 64-column lines; the last line is shorter than 64 (empty when the body is a multiple of 48 bytes). */
function bodyLines(body: Uint8Array): string {
  let out = "";
  for (let i = 0; i <= body.length; i += 48) out += `${b64(body.subarray(i, i + 48))}\n`;
  return out;
}

/** The STREAM payload: 64 KiB chunks, nonce = 11-byte big-endian counter || last-chunk flag. */
function encryptStream(key: Uint8Array, plain: Uint8Array): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  const nonce = new Uint8Array(12);
  const count = Math.max(1, Math.ceil(plain.length / CHUNK));
  for (let i = 0; i < count; i++) {
    let c = i;
    for (let j = 10; j >= 0 && c > 0; j--) {
      nonce[j] = c & 0xff;
      c = Math.floor(c / 256);
    }
    if (i === count - 1) nonce[11] = 1;
    chunks.push(chachaPolySeal(key, nonce, plain.subarray(i * CHUNK, (i + 1) * CHUNK)));
  }
  return chunks;
}

/**
 * The binary age v1 file of `plaintext` encrypted to every X25519 recipient ("age1…"). The
 * stanza keys, one per recipient in order, are given when made off the event loop
 * (stanzaKeys); without them they are made here.
 */
export function ageSeal(recipients: readonly string[], plaintext: Uint8Array | string, ready?: readonly StanzaKey[]): Uint8Array {
  if (recipients.length === 0) throw new Error("age: at least one recipient is needed");
  const keys = recipients.map((r) => ({ r, key: recipientKey(r) }));
  if (ready && ready.length !== keys.length) throw new Error("age: one stanza key per recipient is needed");
  const plain = typeof plaintext === "string" ? Buffer.from(plaintext, "utf8") : plaintext;
  const fileKey = randomBytes(16);
  let header = VERSION_LINE;
  keys.forEach(({ key }, i) => (header += x25519Stanza(fileKey, ready?.[i] ?? stanzaKey(key))));
  header += "---";
  const headerBytes = Buffer.from(header, "latin1");
  const mac = createHmac("sha256", hkdf(fileKey, new Uint8Array(0), "header"))
    .update(headerBytes)
    .digest();
  const nonce = randomBytes(16);
  const payload = encryptStream(hkdf(fileKey, nonce, "payload"), plain);
  return Buffer.concat([headerBytes, Buffer.from(` ${b64(mac)}\n`, "latin1"), nonce, ...payload]);
}
