import { expect, test } from "bun:test";
import { patternProblem } from "./policies.ts";

test("valid patterns pass", () => {
  expect(patternProblem("*", "model:invoke")).toBeNull();
  expect(patternProblem("group:sales", "tool:crm.update")).toBeNull();
  expect(patternProblem("user:usr_01", "tool:search")).toBeNull();
});

test("a bad src names the src part and the flag", () => {
  const m = patternProblem("usr:alice", "model:invoke")!;
  expect(m).toContain('unknown kind "usr"');
  expect(m).toContain("--src-pattern");
  expect(m).toEndWith("(invalid_pattern)");
});

test("a bad dst names the dst part and the flag", () => {
  const m = patternProblem("*", "tool:bad name")!;
  expect(m).toContain('tool name "bad name"');
  expect(m).toContain("--dst-pattern");
  expect(patternProblem("*", "model:call")).toContain('"model:invoke"');
  expect(patternProblem("group:", "model:invoke")).toContain("group name after");
});
