import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AuditMemory, MAX_SKIP } from "./memory.ts";
import { trustFileName } from "./pins.ts";

const home = mkdtempSync(join(tmpdir(), "svc-memory-"));
afterAll(() => rmSync(home, { recursive: true, force: true }));
const hash = (n: number, salt = "") => Bun.SHA256.hash(`${salt}${n}`, "hex");
const url = "https://cp.example.com";

describe("AuditMemory", () => {
  test("a record changed after a run saw it is named; new ones are remembered only after a clean run", () => {
    const first = AuditMemory.at(home, url, "org_1");
    for (let s = 1; s <= 5; s++) expect(first.recall("store", s, hash(s))).toBeNull();
    first.commit("2026-01-01T00:00:00.000Z");

    const second = AuditMemory.at(home, url, "org_1");
    expect(second.recall("store", 1, hash(1))).toBeNull();
    expect(second.recall("store", 3, hash(3, "forged"))).toEqual({ seenAt: "a run up to 2026-01-01T00:00:00.000Z" });
    expect(second.recall("store", 6, hash(6))).toBeNull();
    second.discard();

    // the discarded run left nothing: #6 is new again, so anything goes there
    const third = AuditMemory.at(home, url, "org_1");
    expect(third.recall("store", 6, hash(6, "other"))).toBeNull();
    // skipped numbers (retention deleted them before this verifier ever saw them) stay unknown
    expect(third.recall("store", 9, hash(9))).toBeNull();
    third.commit("2026-01-02T00:00:00.000Z");
    const fourth = AuditMemory.at(home, url, "org_1");
    expect(fourth.recall("store", 7, hash(7, "anything"))).toBeNull();
    expect(fourth.recall("store", 9, hash(9, "forged"))).not.toBeNull();
    expect(fourth.recall("admin", 1, hash(1))).toBeNull();
    fourth.discard();
  });

  test("each control plane and organization has its own memory; 8 bytes a record; many records flushed in blocks", () => {
    const m = AuditMemory.at(home, url, "org_2");
    for (let s = 1; s <= 20_000; s++) m.recall("store", s, hash(s));
    m.commit("2026-01-03T00:00:00.000Z");
    const dir = join(home, ".config", "svc", "audit-seen");
    const file = join(dir, trustFileName(url, "org_2"), "store.bin");
    // an organization id from the server is never a path
    expect(trustFileName(url, "../../etc")).toMatch(/^_+etc-[0-9a-f]{16}$/);
    expect(statSync(file).size).toBe(20_000 * 8);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(existsSync(`${file}.new`)).toBe(false);
    const again = AuditMemory.at(home, url, "org_2");
    expect(again.recall("store", 19_999, hash(19_999, "x"))).not.toBeNull();
    expect(AuditMemory.at(home, "https://other.example.com", "org_2").recall("store", 1, hash(1, "x"))).toBeNull();
    again.discard();

    // a later run appends what it saw to the file, a block at a time
    const later = AuditMemory.at(home, url, "org_2");
    for (let s = 1; s <= 40_000; s++) expect(later.recall("store", s, hash(s))).toBeNull();
    later.commit("2026-01-04T00:00:00.000Z");
    expect(statSync(file).size).toBe(40_000 * 8);
    expect(AuditMemory.at(home, url, "org_2").recall("store", 30_000, hash(30_000, "x"))).not.toBeNull();
  });

  test("a number far beyond the chain (written into the store) is not remembered: no file of petabytes of unknowns", () => {
    const m = AuditMemory.at(home, url, "org_3");
    for (let s = 1; s <= 10; s++) m.recall("store", s, hash(s));
    expect(m.recall("store", 2 ** 52, hash(0))).toBeNull();
    expect(m.recall("store", 11 + MAX_SKIP + 1, hash(0))).toBeNull();
    m.commit("2026-01-05T00:00:00.000Z");
    expect(statSync(join(home, ".config", "svc", "audit-seen", trustFileName(url, "org_3"), "store.bin")).size).toBe(10 * 8);
  });
});
