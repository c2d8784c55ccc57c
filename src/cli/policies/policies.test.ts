import { expect, test } from "bun:test";
import { newId } from "../../contract/ids.ts";
import { userIdProblem } from "../../contract/patterns.ts";
import { patternProblem } from "./policies.ts";

const USR = newId("user");

test("valid patterns pass", () => {
  expect(patternProblem("*", "model:invoke")).toBeNull();
  expect(patternProblem("group:sales", "tool:crm.update")).toBeNull();
  expect(patternProblem(`user:${USR}`, "tool:search")).toBeNull();
  expect(patternProblem(`user:${newId("installation")}`, "tool:search")).toBeNull();
});

test("a bad src names the src part and the flag", () => {
  const m = patternProblem("usr:alice", "model:invoke")!;
  expect(m).toBe('src-pattern "usr:alice": unknown kind "usr" (use "user:", "group:" or "*"); fix --src-pattern and run it again');
  expect(patternProblem("group:", "model:invoke")).toContain("group name after");
  expect(patternProblem("README.md", "model:invoke")).toEndWith("; write '*' in quotes so the shell does not expand it");
});

test("user:<id> must be a service user id (usr_…), each wrong form with its own advice", () => {
  expect(userIdProblem("user:alice@example.com", "alice@example.com")).toBe(
    'src-pattern "user:alice@example.com": "alice@example.com" is an email, not a service user id; find the id with `svc users resolve --email alice@example.com` and write user:usr_…',
  );
  expect(userIdProblem("user:usr_01", "usr_01")).toContain('"usr_01" is not a whole service user id (usr_ and 26 capital letters and digits); copy it exactly');
  expect(userIdProblem(`user:${USR.toLowerCase()}`, USR.toLowerCase())).toContain("is not a whole service user id");
  expect(userIdProblem("user:fe-bob", "fe-bob")).toBe(
    'src-pattern "user:fe-bob": "fe-bob" is not a service user id (usr_…); policies name service users, not front-end user ids or names: find it with `svc users resolve --email <email>`, or use group:<name>',
  );
  expect(patternProblem("user:alice", "model:invoke")).toContain('"alice" is not a service user id');
});

test("a bad dst names the dst part and the flag", () => {
  const m = patternProblem("*", "tool:bad name")!;
  expect(m).toContain('tool name "bad name"');
  expect(m).toContain("--dst-pattern");
  expect(patternProblem("*", "model:call")).toContain('"model:invoke"');
});
