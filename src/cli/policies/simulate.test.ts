// simulate() replays recorded decisions with the proxy's decision code; arguments it cannot
// see are judged only where no condition reads them.
import { describe, expect, test } from "bun:test";
import { bundleIdentity, bundleTool, fakeBundle } from "../../proxy/testing/bundle.ts";
import { parsePolicyFile } from "./code.ts";
import { type RecordedDecision, proposedPolicies, simulate } from "./simulate.ts";

const bundle = fakeBundle({
  version: 2,
  revision: 3,
  tools: [bundleTool("crm.credit", "write"), bundleTool("crm.read")],
  policies: [
    { id: "pol_c", name: "sales credit", src: "group:sales", dst: "tool:crm.credit", effect: "permit" },
    { id: "pol_r", name: "anyone reads", src: "*", dst: "tool:crm.read", effect: "permit" },
  ],
  identities: [bundleIdentity("ada", ["sales"])],
});

let n = 0;
const rec = (tool: string, decision: string, over: Partial<RecordedDecision> = {}): RecordedDecision => ({
  id: `rec_${++n}`,
  ts: "2026-11-20T10:00:00.000Z",
  kind: "tool",
  tool_name: tool,
  decision,
  installation_id: "inst_1",
  subject: { user_id: "usr_ada", email: "ada@example.com", remote_user_id: "fe-ada", via_installation: false },
  encryption: { mode: "recipients" },
  ...over,
});

describe("simulate", () => {
  const proposed = parsePolicyFile(
    [
      "workspace: default",
      "policies:",
      "  - {name: small credits, src: 'group:sales', dst: 'tool:crm.credit', effect: permit, condition: 'args.amount <= 500'}",
      "  - {name: office reads, src: '*', dst: 'tool:crm.read', effect: permit, condition: \"now.getHours('UTC') >= 9 && now.getHours('UTC') < 17\"}",
      "  - {name: other agent, src: '*', dst: 'tool:crm.read', effect: deny, agent_id: agt_2}",
    ].join("\n"),
  );
  const next = { ...bundle, policies: proposedPolicies(proposed, bundle) };

  test("the current set replays every record as it was decided", () => {
    const records = [rec("crm.credit", "permit"), rec("crm.read", "permit"), rec("crm.read", "permit", { subject: { user_id: null, remote_user_id: null, via_installation: true } })];
    const sim = simulate(records, new Map([["inst_1", bundle]]), () => ({ known: false, why: "digest-only" }));
    expect(sim).toEqual({ replayed: 3, changed: [], not_judged: [] });
  });

  test("a proposed set: argument conditions with decrypted arguments, time conditions at the record's time, unknown arguments not judged", () => {
    const big = rec("crm.credit", "permit");
    const small = rec("crm.credit", "permit");
    const hidden = rec("crm.credit", "permit", { encryption: { mode: "digest-only" } });
    const night = rec("crm.read", "permit", { ts: "2026-11-20T22:00:00.000Z" });
    const day = rec("crm.read", "permit");
    const args = new Map<string, unknown>([
      [big.id, { amount: 900 }],
      [small.id, { amount: 100 }],
    ]);
    const sim = simulate([big, small, hidden, night, day], new Map([["inst_1", next]]), (id) =>
      args.has(id) ? { known: true, args: args.get(id) } : { known: false, why: "digest-only: no arguments were stored" },
    );
    expect(sim.replayed).toBe(4);
    expect(sim.changed).toEqual([
      { id: big.id, ts: big.ts, tool: "crm.credit", user: "ada@example.com", was: "permit", would: "deny", policy: "Refused (svc.denied): no policy permits tool:crm.credit for this user" },
      { id: night.id, ts: night.ts, tool: "crm.read", user: "ada@example.com", was: "permit", would: "deny", policy: "Refused (svc.denied): no policy permits tool:crm.read for this user" },
    ]);
    expect(sim.not_judged).toEqual([{ id: hidden.id, ts: hidden.ts, tool: "crm.credit", why: "digest-only: no arguments were stored" }]);
    // the policy bound to another agent is not part of this agent's proposed set
    expect(next.policies.map((p) => p.name)).toEqual(["small credits", "office reads"]);
  });

  test("records of a deleted installation are listed as not judged", () => {
    const r = rec("crm.read", "permit", { installation_id: "inst_gone" });
    expect(simulate([r], new Map([["inst_1", bundle]]), () => ({ known: false, why: "x" })).not_judged).toEqual([
      { id: r.id, ts: r.ts, tool: "crm.read", why: "installation inst_gone no longer exists" },
    ]);
  });
});
