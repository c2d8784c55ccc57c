import { describe, expect, test } from "bun:test";
import { apiFilters, encryptionCell, outcomeCell, utcFromLocalInput } from "./audit.ts";

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

describe("one row per call", () => {
  const base = { decision: "permit" as const, kind: "tool" as const, outcome: null, exit_code: null, ref: null };
  test("the outcome beside its decision, its record one click away; none yet, or not run for a refusal", () => {
    const cell = String(outcomeCell({ ...base, call_outcome: { id: "rec_OUT", ts: "2026-11-27T10:00:00.000Z", outcome: "error", exit_code: 2, duration_ms: 40 } }));
    expect(cell).toContain("badge-bad");
    expect(cell).toContain("exit 2");
    expect(cell).toContain('href="/audit/rec_OUT"');
    expect(String(outcomeCell({ ...base, call_outcome: null }))).toContain("none recorded yet");
    expect(String(outcomeCell({ ...base, decision: "deny", call_outcome: null }))).toContain("not run");
  });
  test("an outcome record listed alone links back to its decision", () => {
    const cell = String(outcomeCell({ ...base, kind: "outcome", outcome: "ok", exit_code: 0, ref: "rec_DEC" }));
    expect(cell).toContain('href="/audit/rec_DEC"');
  });
  test("the page asks for calls unless it asks for outcome records", () => {
    const f = Object.fromEntries(["tool", "decision", "kind", "background", "user", "installation", "from", "to", "policy", "shadow"].map((k) => [k, ""])) as never;
    expect(apiFilters(f).view).toBe("calls");
    expect(apiFilters({ ...(f as object), kind: "outcome" } as never).view).toBe("records");
  });
});
