import { describe, expect, test } from "bun:test";
import type { BundlePolicy, PolicyBundle } from "../../contract/bundle.ts";
import { auditSubject, indexBundle, decideModel, decideTool, visibleModels } from "./policy-index.ts";

let n = 0;
const pol = (src: string, dst: string, effect: "permit" | "deny" = "permit"): BundlePolicy => ({ id: `pol_${++n}`, name: `p${n}`, src, dst, effect });

function bundle(policies: BundlePolicy[], over: Partial<PolicyBundle> = {}): PolicyBundle {
  return {
    version: 1,
    revision: 7,
    generated_at: "2026-01-01T00:00:00.000Z",
    organization_id: "org_1",
    workspace_id: "ws_1",
    installation_id: "inst_1",
    agent_id: "agt_1",
    tools: [
      { name: "crm.read", access: "read", required_capabilities: [] },
      { name: "crm.update", access: "write", required_capabilities: [] },
    ],
    policies,
    identities: [
      { remote_user_id: "fe-alice", user_id: "usr_alice", email: "alice@example.com", groups: ["sales", "staff"] },
      { remote_user_id: "fe-bob", user_id: "usr_bob", email: "bob@example.com", groups: [] },
    ],
    model_profile: { id: "mp_1", display_name: "GPT", endpoint: "https://m.example/v1", auth_type: "none", default_model: "gpt-x", models: ["gpt-x", "gpt-y"], api_key_sealed: null },
    recipients: [],
    ...over,
  };
}

const alice = { id: "fe-alice" };
const bob = { id: "fe-bob" };
const stranger = { id: "fe-nobody" };

describe("tool decisions", () => {
  test("permit by user id (the service user id, not the front-end id)", () => {
    const c = indexBundle(bundle([pol("user:usr_alice", "tool:crm.read"), pol("user:fe-bob", "tool:crm.read")]));
    const d = decideTool(c, alice, "crm.read");
    expect(d.decision).toBe("permit");
    expect(d.policyId).toBe(c.bundle.policies[0]!.id);
    expect(d.reason).toBe("policy");
    expect(decideTool(c, bob, "crm.read").decision).toBe("deny");
  });

  test("permit by group, by *, and default deny", () => {
    const c = indexBundle(bundle([pol("group:sales", "tool:crm.update"), pol("*", "tool:crm.read")]));
    expect(decideTool(c, alice, "crm.update").decision).toBe("permit");
    expect(decideTool(c, bob, "crm.update")).toMatchObject({ decision: "deny", code: "svc.denied", message: "Refused (svc.denied): no policy permits tool:crm.update for this user" });
    expect(decideTool(c, bob, "crm.read").decision).toBe("permit");
  });

  test("deny overrides permit, whatever the order and specificity", () => {
    const c = indexBundle(bundle([pol("user:usr_alice", "tool:crm.update"), pol("group:staff", "tool:crm.update", "deny")]));
    const d = decideTool(c, alice, "crm.update");
    expect(d).toMatchObject({ decision: "deny", code: "svc.denied", policyId: c.bundle.policies[1]!.id });
    expect(d.message).toStartWith("Refused (svc.denied): ");
    const c2 = indexBundle(bundle([pol("*", "tool:crm.read", "deny"), pol("user:usr_alice", "tool:crm.read")]));
    expect(decideTool(c2, alice, "crm.read").decision).toBe("deny");
  });

  test("a policy for another tool does not leak", () => {
    const c = indexBundle(bundle([pol("*", "tool:crm.read")]));
    expect(decideTool(c, alice, "crm.update").decision).toBe("deny");
  });

  test("unregistered tool: tool_not_registered even with a permit", () => {
    const c = indexBundle(bundle([pol("*", "tool:mail.send")]));
    const d = decideTool(c, alice, "mail.send");
    expect(d).toMatchObject({ decision: "deny", code: "tool_not_registered", reason: "tool_not_registered" });
    // spec §7: the text is the bare code, not "Refused (tool_not_registered)…"
    expect(d.message).toBe("tool_not_registered");
  });

  test("unlinked front-end user: identity.unlinked, even where * permits", () => {
    const c = indexBundle(bundle([pol("*", "tool:crm.read")]));
    const d = decideTool(c, stranger, "crm.read");
    expect(d).toMatchObject({ decision: "deny", code: "identity.unlinked" });
    // spec §7: exactly "Refused (identity.unlinked)", nothing after it
    expect(d.message).toBe("Refused (identity.unlinked)");
    expect(auditSubject(d.subject)).toEqual({ user_id: null, remote_user_id: "fe-nobody", via_installation: true });
  });

  test("no session user: decided as the installation subject, audited via installation", () => {
    const c = indexBundle(bundle([pol("user:usr_alice", "tool:crm.read")]));
    const d = decideTool(c, null, "crm.read");
    expect(d).toMatchObject({ decision: "deny", code: "svc.denied" });
    expect(auditSubject(d.subject)).toEqual({ user_id: null, remote_user_id: null, via_installation: true });
    expect(decideTool(indexBundle(bundle([pol("*", "tool:crm.read")])), null, "crm.read").decision).toBe("permit");
    expect(decideTool(indexBundle(bundle([pol("user:inst_1", "tool:crm.read")])), null, "crm.read").decision).toBe("permit");
  });

  test("linked users are audited under their service user", () => {
    const c = indexBundle(bundle([]));
    expect(auditSubject(decideTool(c, alice, "crm.read").subject)).toEqual({ user_id: "usr_alice", remote_user_id: "fe-alice", via_installation: false });
  });

  test("unparseable policies are skipped, not fatal", () => {
    const c = indexBundle(bundle([pol("nonsense", "tool:crm.read"), pol("*", "tool:crm.read")]));
    expect(c.skipped).toBe(1);
    expect(decideTool(c, alice, "crm.read").decision).toBe("permit");
  });

  test("cost does not grow with the number of policies", () => {
    const many: BundlePolicy[] = [];
    for (let i = 0; i < 20000; i++) many.push(pol(`user:usr_${i}`, `tool:t${i % 500}`), pol(`group:g${i}`, "tool:crm.read"));
    many.push(pol("group:staff", "tool:crm.read"));
    const c = indexBundle(bundle(many));
    const d = decideTool(c, alice, "crm.read");
    expect(d.decision).toBe("permit");
    // deny side: user + 2 groups + *; permit side: user + sales + staff (found) → at most 7 lookups
    expect(d.considered).toBeLessThanOrEqual(7);
    const small = decideTool(indexBundle(bundle([pol("group:staff", "tool:crm.read")])), alice, "crm.read");
    expect(d.considered).toBe(small.considered);
  });
});

describe("model decisions", () => {
  test("v1: model:invoke permits decide", () => {
    const c = indexBundle(bundle([pol("group:sales", "model:invoke")]));
    expect(decideModel(c, alice)).toMatchObject({ decision: "permit", reason: "policy" });
    expect(decideModel(c, bob)).toMatchObject({ decision: "deny", code: "svc.denied" });
    expect(visibleModels(c, alice)?.models).toEqual(["gpt-x", "gpt-y"]);
    expect(visibleModels(c, bob)).toBeNull();
  });

  test("v1: deny overrides a model permit", () => {
    const c = indexBundle(bundle([pol("*", "model:invoke"), pol("user:usr_bob", "model:invoke", "deny")]));
    expect(decideModel(c, alice).decision).toBe("permit");
    expect(decideModel(c, bob).decision).toBe("deny");
  });

  test("v2: the profile assignment decides, permits ignored", () => {
    const c = indexBundle(bundle([], { version: 2 }));
    expect(decideModel(c, bob)).toMatchObject({ decision: "permit", reason: "assignment" });
    expect(visibleModels(c, bob)?.models).toEqual(["gpt-x", "gpt-y"]);
    const none = indexBundle(bundle([pol("*", "model:invoke")], { version: 2, model_profile: null }));
    expect(decideModel(none, alice)).toMatchObject({ decision: "deny", code: "svc.denied" });
    expect(visibleModels(none, alice)).toBeNull();
    expect(decideModel(c, stranger)).toMatchObject({ code: "identity.unlinked", message: "Refused (identity.unlinked)" });
  });

  test("no profile: no models and model calls refused, in v1 too", () => {
    const c = indexBundle(bundle([pol("*", "model:invoke")], { model_profile: null }));
    expect(visibleModels(c, alice)).toBeNull();
    expect(decideModel(c, alice).decision).toBe("deny");
  });

  test("profile without a model list offers its default model", () => {
    const b = bundle([pol("*", "model:invoke")]);
    b.model_profile!.models = [];
    expect(visibleModels(indexBundle(b), alice)?.models).toEqual(["gpt-x"]);
  });
});
