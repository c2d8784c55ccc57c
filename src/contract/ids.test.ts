import { describe, expect, test } from "bun:test";
import { hasPrefix, newId } from "./ids";

describe("newId", () => {
  test("ids made in the same millisecond sort in creation order", () => {
    const ids = Array.from({ length: 1000 }, () => newId("policy", 1_700_000_000_000));
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
  });

  test("a later millisecond sorts after, an earlier one before", () => {
    const now = newId("policy", 1_700_000_000_001);
    expect(newId("policy", 1_700_000_000_002) > now).toBe(true);
    expect(newId("policy", 1_700_000_000_000) < now).toBe(true);
  });

  test("prefix, then 10 time and 16 tail characters of Crockford base32", () => {
    const id = newId("installation");
    expect(hasPrefix(id, "installation")).toBe(true);
    expect(id).toMatch(/^inst_[0-9A-HJKMNP-TV-Z]{26}$/);
  });
});
