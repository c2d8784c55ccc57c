import { expect, test } from "bun:test";
import { harnessDrift, parseFunctionList } from "./drift.ts";

const pipe = { id: "svc", type: "pipe", is_active: true, is_global: false };
const guard = { id: "svc_guard", type: "filter", is_active: true, is_global: true };

test("in sync: active pipe, active global guard", () => {
  expect(harnessDrift([pipe, guard, { id: "other", type: "filter", is_active: false, is_global: false }])).toEqual([]);
});

test("each drift is named", () => {
  expect(harnessDrift([]).map((d) => `${d.function}:${d.problem}`)).toEqual(["svc:missing", "svc_guard:missing"]);
  expect(harnessDrift([{ ...pipe, is_active: false }, guard]).map((d) => d.problem)).toEqual(["inactive"]);
  expect(harnessDrift([pipe, { ...guard, is_active: false, is_global: false }]).map((d) => d.problem)).toEqual(["inactive", "not_global"]);
  expect(harnessDrift([pipe, { ...guard, is_global: false }])[0]!.message).toContain("not global");
  expect(harnessDrift([{ ...pipe, type: "filter" }, guard])[0]!.problem).toBe("wrong_type");
});

test("parses Open WebUI's function list and refuses other bodies", () => {
  expect(parseFunctionList([{ id: "svc", type: "pipe", is_active: true, is_global: false, name: "svc", meta: {}, user_id: "u", created_at: 1, updated_at: 1 }])).toEqual([
    { id: "svc", type: "pipe", is_active: true, is_global: false, name: "svc" },
  ]);
  expect(parseFunctionList({ detail: "Not authenticated" })).toBeNull();
  expect(parseFunctionList([{ name: "x" }])).toBeNull();
});
