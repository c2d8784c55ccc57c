import { describe, expect, test } from "bun:test";
import { bundleDigest, bundleEtag, compileBundle, etagMatches, parseBundleVersion, policiesFor } from "./compile.ts";

describe("bundle compilation (pure)", () => {
  test("parses ?version=, absent meaning 1", () => {
    expect(parseBundleVersion(undefined)).toBe(1);
    expect(parseBundleVersion("1")).toBe(1);
    expect(parseBundleVersion("2")).toBe(2);
    for (const bad of ["3", "0", "1.0", "v1", "abc", " 2x"]) expect(parseBundleVersion(bad)).toBeNull();
  });

  test("ETag is weak, per revision, version, conditions and body digest; If-None-Match is compared weakly, with lists and *", () => {
    const e = bundleEtag(42, 1, false, "00ff00ff00ff00ff");
    expect(e).toBe('W/"42-v1-00ff00ff00ff00ff"');
    expect(etagMatches('W/"42-v1-00ff00ff00ff00ff"', e)).toBe(true);
    expect(etagMatches('"42-v1-00ff00ff00ff00ff"', e)).toBe(true);
    expect(etagMatches('W/"41-v1-00ff00ff00ff00ff", W/"42-v1-00ff00ff00ff00ff"', e)).toBe(true);
    expect(etagMatches("*", e)).toBe(true);
    expect(etagMatches('W/"42-v2-00ff00ff00ff00ff"', e)).toBe(false);
    expect(etagMatches('W/"4-v1-00ff00ff00ff00ff"', e)).toBe(false);
    expect(etagMatches(undefined, e)).toBe(false);
    // the ETags of releases before 0.2.0 (no digest) never match a new one: the body is sent again
    expect(etagMatches('W/"42-v1"', e)).toBe(false);
    expect(etagMatches('W/"42-v1c"', bundleEtag(42, 1, true, "00ff00ff00ff00ff"))).toBe(false);
  });

  test("the body digest covers every field but generated_at", () => {
    const base = compileBundle({
      version: 2,
      revision: 9,
      generatedAt: 1,
      organizationId: "org_1",
      workspaceId: "ws_1",
      installationId: "inst_1",
      agentId: "agt_1",
      tools: [],
      policies: [{ id: "pol_1", name: "p", src: "*", dst: "tool:a", effect: "permit", condition: "args.x < 5" }],
      identities: [],
      modelProfile: null,
      recipients: [],
      conditions: true,
    });
    expect(bundleDigest({ ...base, generated_at: new Date(99).toISOString() })).toBe(bundleDigest(base));
    // the same revision compiled by a release that drops the condition (an old replica): another digest
    expect(bundleDigest({ ...base, policies: [{ id: "pol_1", name: "p", src: "*", dst: "tool:a", effect: "permit" }] })).not.toBe(bundleDigest(base));
    expect(bundleDigest({ ...base, features: [] })).not.toBe(bundleDigest(base));
    expect(base.features).toEqual(["conditions"]);
  });

  test("sorts lists so equal inputs give equal bundles", () => {
    const b = compileBundle({
      version: 2,
      revision: 9,
      generatedAt: Date.UTC(2025, 0, 1),
      organizationId: "org_1",
      workspaceId: "ws_1",
      installationId: "inst_1",
      agentId: "agt_1",
      tools: [
        { name: "z.tool", access: "write", required_capabilities: [] },
        { name: "a.tool", access: "read", required_capabilities: ["x"] },
      ],
      policies: [
        { id: "pol_2", name: "b", src: "*", dst: "tool:a.tool", effect: "permit" },
        { id: "pol_1", name: "a", src: "group:eng", dst: "model:invoke", effect: "permit" },
      ],
      identities: [
        { remote_user_id: "u2", user_id: "usr_2", email: "b@x", groups: ["z", "a"] },
        { remote_user_id: "u1", user_id: "usr_1", email: "a@x", groups: [] },
      ],
      modelProfile: null,
      recipients: [],
      conditions: false,
    });
    expect(b.version).toBe(2);
    expect(b.generated_at).toBe("2025-01-01T00:00:00.000Z");
    expect(b.tools.map((t) => t.name)).toEqual(["a.tool", "z.tool"]);
    expect(b.policies.map((p) => p.id)).toEqual(["pol_1", "pol_2"]);
    expect(b.identities.map((i) => i.remote_user_id)).toEqual(["u1", "u2"]);
    expect(b.identities[1]?.groups).toEqual(["a", "z"]);
  });

  test("conditions and shadow policies reach only proxies that evaluate them; older ones get the safe subset", () => {
    const policies = [
      { id: "pol_1", name: "plain", src: "*", dst: "tool:a", effect: "permit" as const },
      { id: "pol_2", name: "cond permit", src: "*", dst: "tool:a", effect: "permit" as const, condition: "args.n < 5" },
      { id: "pol_3", name: "cond deny", src: "*", dst: "tool:a", effect: "deny" as const, condition: "args.n > 9" },
      { id: "pol_4", name: "shadow", src: "*", dst: "tool:a", effect: "deny" as const, mode: "shadow" as const },
      { id: "pol_5", name: "enforce", src: "*", dst: "tool:a", effect: "permit" as const, condition: null, mode: "enforce" as const },
    ];
    const all = new Set(["conditions", "shadow"]);
    expect(policiesFor(policies, all)).toEqual([
      { id: "pol_1", name: "plain", src: "*", dst: "tool:a", effect: "permit" },
      { id: "pol_2", name: "cond permit", src: "*", dst: "tool:a", effect: "permit", condition: "args.n < 5" },
      { id: "pol_3", name: "cond deny", src: "*", dst: "tool:a", effect: "deny", condition: "args.n > 9" },
      { id: "pol_4", name: "shadow", src: "*", dst: "tool:a", effect: "deny", mode: "shadow" },
      { id: "pol_5", name: "enforce", src: "*", dst: "tool:a", effect: "permit" },
    ]);
    // An older proxy ignores condition and mode: no conditional permit (it would widen), the
    // conditional deny unconditionally (it narrows), no shadow policy (it would enforce).
    expect(policiesFor(policies, new Set())).toEqual([
      { id: "pol_1", name: "plain", src: "*", dst: "tool:a", effect: "permit" },
      { id: "pol_3", name: "cond deny", src: "*", dst: "tool:a", effect: "deny" },
      { id: "pol_5", name: "enforce", src: "*", dst: "tool:a", effect: "permit" },
    ]);
    // During a rolling upgrade with a replica that knows conditions but not shadow mode: the
    // shadow policy is left out, the rest whole (issue 29).
    expect(policiesFor(policies, new Set(["conditions"])).map((p) => p.id)).toEqual(["pol_1", "pol_2", "pol_3", "pol_5"]);
    // A policy a later release marked with a feature this one does not know: its narrower form.
    const future = [
      { id: "pol_6", name: "future permit", src: "*", dst: "tool:a", effect: "permit" as const, requires: ["time_windows"] },
      { id: "pol_7", name: "future deny", src: "*", dst: "tool:a", effect: "deny" as const, condition: "args.n > 1", requires: ["time_windows"] },
    ];
    expect(policiesFor(future, all)).toEqual([{ id: "pol_7", name: "future deny", src: "*", dst: "tool:a", effect: "deny" }]);
    expect(bundleEtag(42, 2, true, "d")).toBe('W/"42-v2c-d"');
    expect(etagMatches(bundleEtag(42, 2, false, "d"), bundleEtag(42, 2, true, "d"))).toBe(false);
  });
});
