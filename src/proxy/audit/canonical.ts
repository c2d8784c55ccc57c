// Canonical JSON (RFC 8785 style: object keys sorted by UTF-16 code units, no insignificant
// whitespace, ECMAScript number and string serialisation, UTF-8) and the audit args digest.
// Numbers a double does not hold come as JsonNumber (exact-json.ts) and are written exactly.
// Pure: the same arguments always give the same digest, whatever key order the caller used.
import { createHmac } from "node:crypto";
import { JsonNumber } from "./exact-json.ts";

export function canonicalJson(value: unknown): string {
  if (value === null || value === undefined) return "null";
  switch (typeof value) {
    case "boolean":
      return value ? "true" : "false";
    case "number":
      if (!Number.isFinite(value)) throw new TypeError("canonical JSON cannot hold NaN or Infinity");
      return JSON.stringify(value);
    case "string":
      return JSON.stringify(value);
    case "bigint":
      throw new TypeError("canonical JSON cannot hold a bigint");
    case "object": {
      if (value instanceof JsonNumber) return value.text;
      if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? "null" : canonicalJson(v))).join(",")}]`;
      const obj = value as Record<string, unknown>;
      if (typeof (obj as { toJSON?: unknown }).toJSON === "function") return canonicalJson((obj as { toJSON(): unknown }).toJSON());
      const keys = Object.keys(obj)
        .filter((k) => obj[k] !== undefined && typeof obj[k] !== "function")
        .sort();
      return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(",")}}`;
    }
    default:
      throw new TypeError(`canonical JSON cannot hold a ${typeof value}`);
  }
}

export const DIGEST_PREFIX = "hmac-sha256:";

/** "hmac-sha256:" + hex(HMAC-SHA-256(org digest key, canonical JSON)), from the canonical text. */
export function digestOfCanonical(digestKey: Uint8Array, canonical: string): string {
  return DIGEST_PREFIX + createHmac("sha256", digestKey).update(canonical, "utf8").digest("hex");
}

/** "hmac-sha256:" + hex(HMAC-SHA-256(org digest key, canonical JSON of the arguments)). */
export function argsDigest(digestKey: Uint8Array, args: unknown): string {
  return digestOfCanonical(digestKey, canonicalJson(args));
}
