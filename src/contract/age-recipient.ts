// The exact check that a string is an age X25519 recipient: "age1" + bech32 that decodes
// to the prefix "age" and exactly 32 bytes, and a point age can encrypt to: not of low order
// (a low-order point makes every shared secret all-zero, which age refuses, so every record
// sealed to it would fail). Shared by the control plane (validate keys), the CLI (validate
// before upload), and the proxy (the key it seals audit content to).
import { bech32 } from "@scure/base";
import { createPublicKey, diffieHellman, generateKeyPairSync, type KeyObject } from "node:crypto";

/** DER SubjectPublicKeyInfo prefix of an X25519 public key; the raw 32 bytes follow. */
const SPKI_X25519 = Buffer.from("302a300506032b656e032100", "hex");
/** Any private key shows a low-order point: its clamped scalar is a multiple of the cofactor 8. */
let probe: KeyObject | null = null;

/** Whether X25519 with this public key gives an all-zero shared secret (a point of low order). */
export function isLowOrderX25519(raw: Uint8Array): boolean {
  probe ??= generateKeyPairSync("x25519").privateKey;
  try {
    const publicKey = createPublicKey({ key: Buffer.concat([SPKI_X25519, raw]), format: "der", type: "spki" });
    return diffieHellman({ privateKey: probe, publicKey }).every((b) => b === 0);
  } catch {
    return true; // refused by the key agreement itself: no record could be sealed to it either
  }
}

/** The 32-byte X25519 public key of an "age1…" recipient; null for anything else. */
export function x25519RecipientKey(s: string): Uint8Array | null {
  if (!s.startsWith("age1")) return null;
  try {
    const { prefix, words } = bech32.decode(s as `${string}1${string}`, 200);
    const raw = bech32.fromWords(words);
    return prefix === "age" && raw.length === 32 ? raw : null;
  } catch {
    return null;
  }
}

export function isX25519Recipient(s: string): boolean {
  return x25519RecipientKey(s) !== null;
}

/** Why a recipient string is refused, or null when it is a valid X25519 recipient. */
export function recipientProblem(s: string): string | null {
  if (!s.startsWith("age1")) return `public key must start with "age1" (an age X25519 recipient)`;
  const raw = x25519RecipientKey(s);
  if (!raw) return `public key "${s.slice(0, 12)}…" does not parse as an age X25519 recipient`;
  if (isLowOrderX25519(raw)) {
    return `public key "${s.slice(0, 12)}…" is a low-order X25519 point: every shared secret with it is zero, so age refuses to encrypt to it and no audit record could be sealed; generate a new key pair (svc audit keys create, or age-keygen)`;
  }
  return null;
}
