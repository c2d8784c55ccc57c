import { describe, expect, test } from "bun:test";
import { encryptionCell, utcFromLocalInput } from "./audit.ts";

describe("audit view helpers", () => {
  test("an encrypted record shows its key ids, a digest-only record says so", () => {
    const enc = encryptionCell({ encryption: { mode: "recipients", key_ids: ["key_A", "key_B"] }, args_digest: null, digest_key_id: null }).value;
    expect(enc).toContain("encrypted to 2 keys");
    expect(enc).toContain("key_A");
    expect(enc).toContain("key_B");
    const one = encryptionCell({ encryption: { mode: "recipients", key_ids: ["key_A"] }, args_digest: null, digest_key_id: null }).value;
    expect(one).toContain("encrypted to 1 key<");
    const dig = encryptionCell({ encryption: { mode: "digest-only" }, args_digest: `hmac-sha256:${"0f".repeat(32)}`, digest_key_id: "dk_1" }).value;
    expect(dig).toContain("digest-only");
    expect(dig).toContain("dk_1");
  });

  test("a record's ciphertext, even if an API answer carried it, is never rendered", () => {
    const record = { encryption: { mode: "recipients" as const, key_ids: ["key_A"] }, args_digest: null, digest_key_id: null, ciphertext: "YWdlLWVuY3J5cHRpb24ub3JnL3Yx" };
    expect(encryptionCell(record).value).not.toContain(record.ciphertext);
  });

  test("datetime-local values are read as UTC", () => {
    expect(utcFromLocalInput("2025-03-02T09:30")).toBe("2025-03-02T09:30:00Z");
    expect(utcFromLocalInput("2025-03-02T09:30:15")).toBe("2025-03-02T09:30:15Z");
    expect(utcFromLocalInput("")).toBeNull();
    expect(utcFromLocalInput("2025-03-02T09:30:00Z")).toBe("2025-03-02T09:30:00Z");
  });
});
