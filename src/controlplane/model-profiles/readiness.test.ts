import { expect, test } from "bun:test";
import { type ReadinessFacts, judgeReadiness } from "./readiness.ts";

const rep = (id: string, recipient = `age1${id}`) => ({ id, recipient });

const ready: ReadinessFacts = {
  endpoint: "https://llm.example.com/v1",
  authType: "api_key",
  defaultModel: "m",
  models: ["m"],
  hasKey: true,
  sealedRecipients: ["age1rep_1"],
  assignedAgents: ["agt_1"],
  replicasInScope: [rep("rep_1")],
  silentInScope: 0,
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
  expect(failing({ replicasInScope: [rep("rep_1"), rep("rep_2")] })).toEqual(["key_sealed_to_runtimes"]);
  expect(failing({ assignedAgents: [] })).toEqual(["assigned_to_agent"]);
  expect(failing({ replicasInScope: [] })).toEqual(["runtime_in_scope"]);
  expect(failing({ authType: "none", hasKey: false, sealedRecipients: [], replicasInScope: [rep("rep_9")] })).toEqual([]);
});

test("the missing replicas are named", () => {
  const c = judgeReadiness({ ...ready, replicasInScope: [rep("rep_1"), rep("rep_2"), rep("rep_3")] }).checks.find((x) => x.name === "key_sealed_to_runtimes")!;
  expect(c.detail).toContain("rep_2, rep_3");
});

test("a replica that bootstrapped again with a new credential-sync key is not sealed to, though its id is the same", () => {
  const c = judgeReadiness({ ...ready, replicasInScope: [rep("rep_1", "age1new-key-of-rep_1")] }).checks.find((x) => x.name === "key_sealed_to_runtimes")!;
  expect(c.ok).toBe(false);
  expect(c.detail).toContain("current credential-sync key of rep_1");
});

test("replicas that share a key (one identity on two replicas) are both sealed to", () => {
  expect(judgeReadiness({ ...ready, sealedRecipients: ["age1shared"], replicasInScope: [rep("rep_1", "age1shared"), rep("rep_2", "age1shared")] }).ready).toBe(true);
});

test("stale or gone replicas do not count, and are reported", () => {
  const r = judgeReadiness({ ...ready, silentInScope: 2 });
  expect(r.ready).toBe(true);
  expect(r.checks.find((x) => x.name === "runtime_in_scope")!.detail).toContain("2 stale or gone replica(s) not counted");
  const none = judgeReadiness({ ...ready, replicasInScope: [], silentInScope: 1 }).checks.find((x) => x.name === "runtime_in_scope")!;
  expect(none.ok).toBe(false);
  expect(none.detail).toContain("has been heard from lately");
});
