import { describe, expect, test } from "bun:test";
import { parsePolicyFile, planText, toPolicyFile } from "./code.ts";

describe("policy files", () => {
  test("export and parse round-trip: what export writes, apply reads back unchanged", () => {
    const file = toPolicyFile("default", [
      { name: "b", src: "group:sales", dst: "tool:crm.credit", effect: "permit", condition: "args.amount <= 500 && 'x' in user.groups", mode: "shadow", agent_id: "agt_1" },
      { name: "a", src: "*", dst: "model:invoke", effect: "permit", condition: null, mode: "enforce", agent_id: null },
    ]);
    expect(file.policies.map((p) => p.name)).toEqual(["a", "b"]);
    expect(file.policies[0]).toEqual({ name: "a", src: "*", dst: "model:invoke", effect: "permit" });
    expect(parsePolicyFile(Bun.YAML.stringify(file, null, 2))).toEqual(file);
  });

  test.each([
    ["not: [yaml", "is not YAML"],
    ["policies: []", 'must have "workspace: <name or id>"'],
    ["workspace: default\npolicies:\n  - name: a\n    src: '*'\n    dst: model:invoke", "policies[0] needs effect"],
    ["workspace: default\npolicies:\n  - {name: a, src: '*', dst: model:invoke, effect: allow}", "effect must be permit or deny"],
    ["workspace: default\npolicies:\n  - {name: a, src: '*', dst: model:invoke, effect: permit, when: x}", 'unknown field "when"'],
    ["workspace: default\npolicies:\n  - {name: a, src: '*', dst: model:invoke, effect: permit, mode: audit}", "mode must be enforce or shadow"],
  ])("%p is refused: %s", (text, words) => {
    expect(() => parsePolicyFile(text, "p.yaml")).toThrow(words);
  });

  test("the plan reads as + ~ - lines, or says there is nothing to do", () => {
    expect(planText({ create: [{ name: "n" }], update: [{ id: "pol_1", name: "u", changes: ["condition", "mode"] }], delete: [{ id: "pol_2", name: "d" }] })).toBe(
      "+ create n\n~ update u (pol_1): condition, mode\n- delete d (pol_2)",
    );
    expect(planText({ create: [], update: [], delete: [] })).toBe("No changes: the workspace's policies already match the file.");
  });
});
