// Key wrapping for secrets the control plane must hold: each organization's audit digest key,
// its escrow identity, directory-sync and OIDC client secrets. The interface is the seam for
// cloud KMS backends; the embedded implementation uses AES-256-GCM under a master key from
// SVC_CP_MASTER_KEY (base64, 32 bytes) or a key file. The context string is bound as AAD, so
// a wrapped value cannot be replayed as another organization's or another kind of secret.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";

export interface Kms {
  readonly keyId: string;
  wrap(plaintext: Uint8Array, context: string): string;
  unwrap(wrapped: string, context: string): Uint8Array;
}

const FORMAT = "kms1";

export class EmbeddedKms implements Kms {
  readonly keyId: string;
  readonly #key: Buffer;

  constructor(masterKey: Uint8Array) {
    if (masterKey.length !== 32) throw new Error(`master key must be 32 bytes, got ${masterKey.length}`);
    this.#key = Buffer.from(masterKey);
    this.keyId = createHash("sha256").update(this.#key).digest("hex").slice(0, 12);
  }

  static fromBase64(b64: string): EmbeddedKms {
    return new EmbeddedKms(Buffer.from(b64.trim(), "base64"));
  }

  static generateKey(): string {
    return randomBytes(32).toString("base64");
  }

  wrap(plaintext: Uint8Array, context: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.#key, iv);
    cipher.setAAD(Buffer.from(context));
    const ct = Buffer.concat([cipher.update(plaintext), cipher.final(), cipher.getAuthTag()]);
    return `${FORMAT}:${this.keyId}:${iv.toString("base64")}:${ct.toString("base64")}`;
  }

  unwrap(wrapped: string, context: string): Uint8Array {
    const [format, keyId, ivB64, ctB64] = wrapped.split(":");
    if (format !== FORMAT || !ivB64 || !ctB64) throw new Error("wrapped secret has an unknown format");
    if (keyId !== this.keyId) throw new Error(`secret was wrapped by master key ${keyId}, not the configured ${this.keyId}`);
    const buf = Buffer.from(ctB64, "base64");
    const decipher = createDecipheriv("aes-256-gcm", this.#key, Buffer.from(ivB64, "base64"));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(buf.subarray(buf.length - 16));
    return new Uint8Array(Buffer.concat([decipher.update(buf.subarray(0, buf.length - 16)), decipher.final()]));
  }
}
