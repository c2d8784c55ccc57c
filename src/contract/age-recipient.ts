// The exact check that a string is an age X25519 recipient: "age1" + bech32 that decodes
// to the prefix "age" and exactly 32 bytes. Shared by the control plane (validate keys)
// and the CLI (validate before upload), and the proxy (the key it seals audit content to).
import { bech32 } from "@scure/base";

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
  if (!isX25519Recipient(s)) return `public key "${s.slice(0, 12)}…" does not parse as an age X25519 recipient`;
  return null;
}
