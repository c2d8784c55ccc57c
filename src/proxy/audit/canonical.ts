// Canonical JSON (RFC 8785 style: object keys sorted by UTF-16 code units, no insignificant
// whitespace, ECMAScript number and string serialisation, UTF-8) and the audit args digest.
// Numbers a double does not hold come as JsonNumber (contract/exact-json.ts) and are written exactly.
// Pure: the same arguments always give the same digest, whatever key order the caller used.
import { JsonNumber } from "../../contract/exact-json.ts";

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
    case "object":
      return canonicalObject(value);
    default:
      throw new TypeError(`canonical JSON cannot hold a ${typeof value}`);
  }
}

// Plain loops and string appends: this runs once per decision on the event loop, and the
// map/filter/template version cost several times more for a small argument object.
function canonicalObject(value: object): string {
  if (value instanceof JsonNumber) return value.text;
  if (Array.isArray(value)) {
    let out = "[";
    for (let i = 0; i < value.length; i++) {
      if (i > 0) out += ",";
      out += value[i] === undefined ? "null" : canonicalJson(value[i]);
    }
    return `${out}]`;
  }
  const obj = value as Record<string, unknown>;
  if (typeof (obj as { toJSON?: unknown }).toJSON === "function") return canonicalJson((obj as { toJSON(): unknown }).toJSON());
  // Array.prototype.sort compares UTF-16 code units, as RFC 8785 orders keys.
  const keys = Object.keys(obj).sort();
  let out = "{";
  let first = true;
  for (const k of keys) {
    const v = obj[k];
    if (v === undefined || typeof v === "function") continue;
    if (!first) out += ",";
    first = false;
    out += JSON.stringify(k);
    out += ":";
    out += canonicalJson(v);
  }
  return `${out}}`;
}

export const DIGEST_PREFIX = "hmac-sha256:";

/** "hmac-sha256:" + hex(HMAC-SHA-256(org digest key, canonical JSON)), from the canonical text. */
export function digestOfCanonical(digestKey: Uint8Array, canonical: string): string {
  // Bun's native HMAC: the same bytes as node:crypto's createHmac, about 8 times cheaper per call.
  return DIGEST_PREFIX + new Bun.CryptoHasher("sha256", digestKey).update(canonical).digest("hex");
}

/** "hmac-sha256:" + hex(HMAC-SHA-256(org digest key, canonical JSON of the arguments)). */
export function argsDigest(digestKey: Uint8Array, args: unknown): string {
  return digestOfCanonical(digestKey, canonicalJson(args));
}
