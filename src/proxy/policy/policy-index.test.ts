import { describe, expect, test } from "bun:test";
import type { BundlePolicy, PolicyBundle } from "../../contract/bundle.ts";
import { bundleIdentity, bundleTool, fakeBundle } from "../testing/bundle.ts";
import { auditSubject, indexBundle, decideModel, decideTool, visibleModels } from "./policy-index.ts";

let n = 0;
const pol = (src: string, dst: string, effect: "permit" | "deny" = "permit", more: Partial<BundlePolicy> = {}): BundlePolicy => ({
  id: `pol_${String(++n).padStart(4, "0")}`,
  name: `p${n}`,
  src,
  dst,
  effect,
  ...more,
});

function bundle(policies: BundlePolicy[], over: Partial<PolicyBundle> = {}): PolicyBundle {
  return fakeBundle({
    revision: 7,
    tools: [bundleTool("crm.read"), bundleTool("crm.update", "write")],
    policies,
    identities: [bundleIdentity("alice", ["sales", "staff"], { attributes: { display_name: "Alice", source: "directory" } }), bundleIdentity("bob")],
    model_profile: { id: "mp_1", display_name: "GPT", endpoint: "https://m.example/v1", auth_type: "none", default_model: "gpt-x", models: ["gpt-x", "gpt-y"], api_key_sealed: null },
    ...over,
  });
}

const NOW = new Date("2026-11-23T10:00:00Z");
const call = { args: {}, now: NOW };
const alice = { id: "fe-alice" };
const bob = { id: "fe-bob" };
const stranger = { id: "fe-nobody" };

describe("tool decisions", () => {
  test("permit by user id (the service user id, not the front-end id)", () => {
    const c = indexBundle(bundle([pol("user:usr_alice", "tool:crm.read"), pol("user:fe-bob", "tool:crm.read")]));
    const d = decideTool(c, alice, "crm.read", call);
    expect(d.decision).toBe("permit");
    expect(d.policyId).toBe(c.bundle.policies[0]!.id);
    expect(d.reason).toBe("policy");
    expect(decideTool(c, bob, "crm.read", call).decision).toBe("deny");
  });

  test("permit by group, by *, and default deny", () => {
    const c = indexBundle(bundle([pol("group:sales", "tool:crm.update"), pol("*", "tool:crm.read")]));
    expect(decideTool(c, alice, "crm.update", call).decision).toBe("permit");
    expect(decideTool(c, bob, "crm.update", call)).toMatchObject({ decision: "deny", code: "svc.denied", message: "Refused (svc.denied): no policy permits tool:crm.update for this user" });
    expect(decideTool(c, bob, "crm.read", call).decision).toBe("permit");
  });

  test("deny overrides permit, whatever the order and specificity", () => {
    const c = indexBundle(bundle([pol("user:usr_alice", "tool:crm.update"), pol("group:staff", "tool:crm.update", "deny")]));
    const d = decideTool(c, alice, "crm.update", call);
    expect(d).toMatchObject({ decision: "deny", code: "svc.denied", policyId: c.bundle.policies[1]!.id });
    expect(d.message).toStartWith("Refused (svc.denied): ");
    const c2 = indexBundle(bundle([pol("*", "tool:crm.read", "deny"), pol("user:usr_alice", "tool:crm.read")]));
    expect(decideTool(c2, alice, "crm.read", call).decision).toBe("deny");
  });

  test("a policy for another tool does not leak", () => {
    const c = indexBundle(bundle([pol("*", "tool:crm.read")]));
    expect(decideTool(c, alice, "crm.update", call).decision).toBe("deny");
  });

  test("unregistered tool: tool_not_registered even with a permit", () => {
    const c = indexBundle(bundle([pol("*", "tool:mail.send")]));
    const d = decideTool(c, alice, "mail.send", call);
    expect(d).toMatchObject({ decision: "deny", code: "tool_not_registered", reason: "tool_not_registered" });
    // spec §7: the text is the bare code, not "Refused (tool_not_registered)…"
    expect(d.message).toBe("tool_not_registered");
  });

  test("unlinked front-end user: identity.unlinked, even where * permits", () => {
    const c = indexBundle(bundle([pol("*", "tool:crm.read")]));
    const d = decideTool(c, stranger, "crm.read", call);
    expect(d).toMatchObject({ decision: "deny", code: "identity.unlinked" });
    // spec §7: exactly "Refused (identity.unlinked)", nothing after it
    expect(d.message).toBe("Refused (identity.unlinked)");
    expect(auditSubject(d.subject)).toEqual({ user_id: null, remote_user_id: "fe-nobody", via_installation: true });
  });

  test("no session user: decided as the installation subject, audited via installation", () => {
    const c = indexBundle(bundle([pol("user:usr_alice", "tool:crm.read")]));
    const d = decideTool(c, null, "crm.read", call);
    expect(d).toMatchObject({ decision: "deny", code: "svc.denied" });
    expect(auditSubject(d.subject)).toEqual({ user_id: null, remote_user_id: null, via_installation: true });
    expect(decideTool(indexBundle(bundle([pol("*", "tool:crm.read")])), null, "crm.read", call).decision).toBe("permit");
    expect(decideTool(indexBundle(bundle([pol("user:inst_1", "tool:crm.read")])), null, "crm.read", call).decision).toBe("permit");
  });

  test("linked users are audited under their service user", () => {
    const c = indexBundle(bundle([]));
    expect(auditSubject(decideTool(c, alice, "crm.read", call).subject)).toEqual({ user_id: "usr_alice", remote_user_id: "fe-alice", via_installation: false });
  });

  test("unparseable policies are skipped, not fatal", () => {
    const c = indexBundle(bundle([pol("nonsense", "tool:crm.read"), pol("*", "tool:crm.read")]));
    expect(c.skipped).toBe(1);
    expect(decideTool(c, alice, "crm.read", call).decision).toBe("permit");
  });

  test("cost does not grow with the number of policies", () => {
    const many: BundlePolicy[] = [];
    for (let i = 0; i < 20000; i++) many.push(pol(`user:usr_${i}`, `tool:t${i % 500}`), pol(`group:g${i}`, "tool:crm.read"));
    many.push(pol("group:staff", "tool:crm.read"));
    const c = indexBundle(bundle(many));
    const d = decideTool(c, alice, "crm.read", call);
    expect(d.decision).toBe("permit");
    // deny side and permit side: user + 2 groups + * each → 8 lookups, whatever the policy count
    expect(d.considered).toBe(8);
    const small = decideTool(indexBundle(bundle([pol("group:staff", "tool:crm.read")])), alice, "crm.read", call);
    expect(d.considered).toBe(small.considered);
  });
});

describe("model decisions", () => {
  test("v1: model:invoke permits decide", () => {
    const c = indexBundle(bundle([pol("group:sales", "model:invoke")]));
    expect(decideModel(c, alice, NOW)).toMatchObject({ decision: "permit", reason: "policy" });
    expect(decideModel(c, bob, NOW)).toMatchObject({ decision: "deny", code: "svc.denied" });
    expect(visibleModels(c, alice, NOW)?.models).toEqual(["gpt-x", "gpt-y"]);
    expect(visibleModels(c, bob, NOW)).toBeNull();
  });

  test("v1: deny overrides a model permit", () => {
    const c = indexBundle(bundle([pol("*", "model:invoke"), pol("user:usr_bob", "model:invoke", "deny")]));
    expect(decideModel(c, alice, NOW).decision).toBe("permit");
    expect(decideModel(c, bob, NOW).decision).toBe("deny");
  });

  test("v2: the profile assignment decides, permits ignored", () => {
    const c = indexBundle(bundle([], { version: 2 }));
    expect(decideModel(c, bob, NOW)).toMatchObject({ decision: "permit", reason: "assignment" });
    expect(visibleModels(c, bob, NOW)?.models).toEqual(["gpt-x", "gpt-y"]);
    const none = indexBundle(bundle([pol("*", "model:invoke")], { version: 2, model_profile: null }));
    expect(decideModel(none, alice, NOW)).toMatchObject({ decision: "deny", code: "svc.denied" });
    expect(visibleModels(none, alice, NOW)).toBeNull();
    expect(decideModel(c, stranger, NOW)).toMatchObject({ code: "identity.unlinked", message: "Refused (identity.unlinked)" });
  });

  test("an unlinked front-end user sees no models, in v2 as in v1 (spec §7: model list empty); the Pipe's listing without a user still does in v2", () => {
    for (const version of [1, 2] as const) {
      const c = indexBundle(bundle([pol("*", "model:invoke")], { version }));
      expect(visibleModels(c, stranger, NOW)).toBeNull();
      expect(decideModel(c, stranger, NOW).code).toBe("identity.unlinked");
      expect(visibleModels(c, alice, NOW)?.models).toEqual(["gpt-x", "gpt-y"]);
    }
    expect(visibleModels(indexBundle(bundle([], { version: 2 })), null, NOW)?.models).toEqual(["gpt-x", "gpt-y"]);
  });

  test("no profile: no models and model calls refused, in v1 too", () => {
    const c = indexBundle(bundle([pol("*", "model:invoke")], { model_profile: null }));
    expect(visibleModels(c, alice, NOW)).toBeNull();
    expect(decideModel(c, alice, NOW).decision).toBe("deny");
  });

  test("profile without a model list offers its default model", () => {
    const b = bundle([pol("*", "model:invoke")]);
    b.model_profile!.models = [];
    expect(visibleModels(indexBundle(b), alice, NOW)?.models).toEqual(["gpt-x"]);
  });
});

describe("conditions", () => {
  // Monday 2026-11-23, 10:00 in Berlin (09:00 UTC).
  const monday = new Date("2026-11-23T09:00:00Z");
  const at = (args: unknown, now = monday) => ({ args, now });
  const cond = (condition: string, effect: "permit" | "deny" = "permit", src = "*") => pol(src, "tool:crm.update", effect, { condition });

  test("on the arguments: one value permitted, another refused", () => {
    const c = indexBundle(bundle([cond("args.amount <= 500 && args.currency == 'EUR'")]));
    expect(decideTool(c, alice, "crm.update", at({ amount: 500, currency: "EUR" })).decision).toBe("permit");
    expect(decideTool(c, alice, "crm.update", at({ amount: 501, currency: "EUR" }))).toMatchObject({
      decision: "deny",
      policyId: null,
      message: "Refused (svc.denied): no policy permits tool:crm.update for this user",
    });
    expect(decideTool(c, alice, "crm.update", at({ amount: 20, currency: "USD" })).decision).toBe("deny");
    // 64-bit integers kept exact (bigint) compare as CEL ints.
    const big = indexBundle(bundle([cond("args.id == 9007199254740993")]));
    expect(decideTool(big, alice, "crm.update", at({ id: 9007199254740993n })).decision).toBe("permit");
    expect(decideTool(big, alice, "crm.update", at({ id: 9007199254740992n })).decision).toBe("deny");
  });

  test("on the user's groups, id, email and directory attributes", () => {
    const groups = indexBundle(bundle([cond("'sales' in user.groups")]));
    expect(decideTool(groups, alice, "crm.update", at({})).decision).toBe("permit");
    expect(decideTool(groups, bob, "crm.update", at({})).decision).toBe("deny");
    const who = indexBundle(bundle([cond("user.id == 'usr_bob' || user.email.endsWith('@example.com') && user.attributes.source == 'directory'")]));
    expect(decideTool(who, alice, "crm.update", at({})).decision).toBe("permit");
    expect(decideTool(who, bob, "crm.update", at({})).decision).toBe("permit");
    const attr = indexBundle(bundle([cond("user.attributes.display_name == args.owner")]));
    expect(decideTool(attr, alice, "crm.update", at({ owner: "Alice" })).decision).toBe("permit");
    expect(decideTool(attr, alice, "crm.update", at({ owner: "Bob" })).decision).toBe("deny");
    // The installation subject: its id, no groups.
    const inst = indexBundle(bundle([cond("user.id == 'inst_1' && size(user.groups) == 0")]));
    expect(decideTool(inst, null, "crm.update", at({})).decision).toBe("permit");
  });

  test("on the time of day and the weekday, in a named time zone", () => {
    const hours = "now.getHours('Europe/Berlin') >= 9 && now.getHours('Europe/Berlin') < 17 && now.getDayOfWeek('Europe/Berlin') >= 1 && now.getDayOfWeek('Europe/Berlin') <= 5";
    const c = indexBundle(bundle([cond(hours)]));
    expect(decideTool(c, alice, "crm.update", at({}, monday)).decision).toBe("permit");
    expect(decideTool(c, alice, "crm.update", at({}, new Date("2026-11-23T16:30:00Z"))).decision).toBe("deny"); // 17:30 Berlin
    expect(decideTool(c, alice, "crm.update", at({}, new Date("2026-11-22T09:00:00Z"))).decision).toBe("deny"); // Sunday
  });

  test("deny overrides permit: a matching conditional deny beats an unconditional permit", () => {
    const c = indexBundle(bundle([pol("*", "tool:crm.update"), cond("args.amount > 1000", "deny", "group:sales")]));
    const refused = decideTool(c, alice, "crm.update", at({ amount: 5000 }));
    expect(refused).toMatchObject({ decision: "deny", policyId: c.bundle.policies[1]!.id });
    expect(refused.message).toContain(`policy "${c.bundle.policies[1]!.name}" denies tool:crm.update`);
    expect(decideTool(c, alice, "crm.update", at({ amount: 10 })).decision).toBe("permit");
    expect(decideTool(c, bob, "crm.update", at({ amount: 5000 })).decision).toBe("permit"); // not in sales
  });

  test("a condition that errors at run time refuses, naming the policy, even beside a permit", () => {
    const p = cond("args.amount <= 500");
    const c = indexBundle(bundle([pol("user:usr_alice", "tool:crm.update"), p]));
    const d = decideTool(c, alice, "crm.update", at({ note: "no amount" }));
    expect(d).toMatchObject({ decision: "deny", code: "svc.denied", policyId: p.id });
    expect(d.message).toBe(`Refused (svc.denied): policy "${p.name}" could not evaluate its condition (field not found: amount)`);
    const typeClash = decideTool(c, alice, "crm.update", at({ amount: "five" }));
    expect(typeClash).toMatchObject({ decision: "deny", policyId: p.id });
    // An erroring deny refuses too.
    const dp = cond("args.amount > 9", "deny");
    expect(decideTool(indexBundle(bundle([pol("*", "tool:crm.update"), dp])), alice, "crm.update", at({}))).toMatchObject({ decision: "deny", policyId: dp.id });
    // A condition the proxy cannot compile (a newer control plane) refuses instead of matching.
    const bad = cond("args.amount <=");
    expect(decideTool(indexBundle(bundle([bad])), alice, "crm.update", at({ amount: 1 }))).toMatchObject({ decision: "deny", policyId: bad.id });
  });

  test("a condition is compiled once per bundle, not per policy or per call", () => {
    const same = "args.amount <= 500";
    const c = indexBundle(bundle([cond(same, "permit", "group:sales"), cond(same, "permit", "group:staff")]));
    const rules = c.rules.get("tool:crm.update")!.permit.groups;
    expect(rules.get("sales")![0]!.condition).toBe(rules.get("staff")![0]!.condition);
  });

  test("decisions stay flat: 20,000 conditional policies on other subjects are never evaluated", () => {
    let evaluated = 0;
    const many: BundlePolicy[] = [];
    for (let i = 0; i < 20000; i++) many.push(pol(`group:g${i}`, "tool:crm.update", "permit", { condition: `args.amount == ${i}` }));
    many.push(cond("args.amount <= 500", "permit", "group:staff"));
    const c = indexBundle(bundle(many));
    for (const r of c.rules.get("tool:crm.update")!.permit.groups.values()) {
      for (const rule of r) {
        const inner = rule.condition!;
        (rule as { condition: typeof inner }).condition = (a) => (evaluated++, inner(a));
      }
    }
    expect(decideTool(c, alice, "crm.update", at({ amount: 100 })).decision).toBe("permit");
    expect(evaluated).toBe(1);
  });
});

describe("shadow mode", () => {
  const at = { args: { amount: 900 }, now: new Date("2026-11-23T09:00:00Z") };

  test("a shadow deny is recorded as the would-be decision and changes nothing", () => {
    const shadow = pol("*", "tool:crm.update", "deny", { mode: "shadow", condition: "args.amount > 500" });
    const c = indexBundle(bundle([pol("group:sales", "tool:crm.update"), shadow]));
    const d = decideTool(c, alice, "crm.update", at);
    expect(d).toMatchObject({ decision: "permit", policyId: c.bundle.policies[0]!.id });
    expect(d.shadow).toEqual({ decision: "deny", policyId: shadow.id, reason: `Refused (svc.denied): policy "${shadow.name}" denies tool:crm.update` });
    // Where the shadow condition is false, the would-be decision equals the real one.
    expect(decideTool(c, alice, "crm.update", { ...at, args: { amount: 10 } }).shadow).toMatchObject({ decision: "permit", policyId: c.bundle.policies[0]!.id });
  });

  test("a shadow permit does not permit; its would-be permit is recorded", () => {
    const shadow = pol("user:usr_bob", "tool:crm.update", "permit", { mode: "shadow" });
    const c = indexBundle(bundle([shadow]));
    const d = decideTool(c, bob, "crm.update", at);
    expect(d.decision).toBe("deny");
    expect(d.shadow).toMatchObject({ decision: "permit", policyId: shadow.id });
  });

  test("no shadow policy on the action: no shadow field", () => {
    const c = indexBundle(bundle([pol("*", "tool:crm.update"), pol("*", "tool:crm.read", "deny", { mode: "shadow" })]));
    expect(decideTool(c, alice, "crm.update", at).shadow).toBeUndefined();
    expect(decideTool(c, alice, "crm.read", at).shadow).toMatchObject({ decision: "deny" });
  });
});
