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

test("never ready when no live runtime could reach the endpoint at its last attempt (TLS, DNS): each named with its error", () => {
  const tls = { replica: "rep_1", state: "unreachable" as const, error: "unable to verify the first certificate", at: "2026-11-25T17:00:00.000Z" };
  const dns = { replica: "rep_2", state: "unreachable" as const, error: "getaddrinfo ENOTFOUND llm.example.com", at: "2026-11-25T17:00:01.000Z" };
  const two = [rep("rep_1"), rep("rep_2")];
  const r = judgeReadiness({ ...ready, sealedRecipients: ["age1rep_1", "age1rep_2"], replicasInScope: two, endpointAttempts: [tls, dns] });
  expect(r.ready).toBe(false);
  const c = r.checks.find((x) => x.name === "endpoint_reached")!;
  expect(c.ok).toBe(false);
  expect(c.detail).toContain("rep_1 at 2026-11-25T17:00:00.000Z: unable to verify the first certificate");
  expect(c.detail).toContain("getaddrinfo ENOTFOUND");
  // one runtime reaching it is enough; the others' errors are still shown
  const some = judgeReadiness({ ...ready, sealedRecipients: ["age1rep_1", "age1rep_2"], replicasInScope: two, endpointAttempts: [{ ...tls, state: "ok", error: null }, dns] });
  expect(some.ready).toBe(true);
  expect(some.checks.find((x) => x.name === "endpoint_reached")!.detail).toContain("1 could not: rep_2");
  // no attempt yet: not a failure, and said so
  const none = judgeReadiness({ ...ready, endpointAttempts: [] }).checks.find((x) => x.name === "endpoint_reached")!;
  expect(none).toMatchObject({ ok: true, detail: expect.stringContaining("no live runtime has tried the endpoint yet") });
});
