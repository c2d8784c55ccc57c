import { expect, test } from "bun:test";
import { type ReadinessFacts, judgeReadiness } from "./readiness.ts";

const ready: ReadinessFacts = {
  endpoint: "https://llm.example.com/v1",
  authType: "api_key",
  defaultModel: "m",
  models: ["m"],
  hasKey: true,
  sealedTo: ["rep_1"],
  assignedAgents: ["agt_1"],
  replicasInScope: ["rep_1"],
};
const failing = (f: Partial<ReadinessFacts>) =>
  judgeReadiness({ ...ready, ...f })
    .checks.filter((c) => !c.ok)
    .map((c) => c.name);

test("all checks pass for a usable profile", () => {
  expect(judgeReadiness(ready).ready).toBe(true);
});

test("each fact fails its own check", () => {
  expect(failing({ endpoint: "http://llm.example.com" })).toEqual(["endpoint_valid"]);
  expect(failing({ models: ["other"] })).toEqual(["default_model_listed"]);
  expect(failing({ hasKey: false })).toEqual(["api_key_present", "key_sealed_to_runtimes"]);
  expect(failing({ replicasInScope: ["rep_1", "rep_2"] })).toEqual(["key_sealed_to_runtimes"]);
  expect(failing({ assignedAgents: [] })).toEqual(["assigned_to_agent"]);
  expect(failing({ replicasInScope: [] })).toEqual(["runtime_in_scope"]);
  expect(failing({ authType: "none", hasKey: false, sealedTo: [], replicasInScope: ["rep_9"] })).toEqual([]);
});

test("the missing replicas are named", () => {
  const c = judgeReadiness({ ...ready, replicasInScope: ["rep_1", "rep_2", "rep_3"] }).checks.find((x) => x.name === "key_sealed_to_runtimes")!;
  expect(c.detail).toContain("rep_2, rep_3");
});
