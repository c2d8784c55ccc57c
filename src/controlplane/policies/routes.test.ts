import { describe, expect, test } from "bun:test";
import { agentAndInstallation, revisionOf } from "../auth/test-fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { policiesForAgent } from "./service.ts";

const base = { name: "staff may chat", src: "group:staff", dst: "model:invoke", effect: "permit", workspace: "default" };

describe("POST /policies", () => {
  test("creates a policy and bumps the organization's revision", async () => {
    const cp = await testControlPlane();
    const before = await revisionOf(cp);
    const res = await cp.call("POST", cp.org("/policies"), { body: base });
    expect(res.status).toBe(201);
    expect(res.json).toEqual({
      id: expect.stringMatching(/^pol_/),
      name: "staff may chat",
      src: "group:staff",
      dst: "model:invoke",
      effect: "permit",
      condition: null,
      mode: "enforce",
      agent_id: null,
      workspace_id: cp.workspaceId,
      created_at: expect.any(String),
      warnings: [],
    });
    expect(await revisionOf(cp)).toBe(before + 1);
  });

  test.each([
    ["src", "role:admin", 'unknown kind "role"'],
    ["src", "user:", 'user id after "user:" is empty'],
    ["src", "alice", 'must be "user:<id>", "group:<name>" or "*"'],
    ["src", "user:alice@example.com", "is an email, not a service user id"],
    ["src", "user:usr_1", "is not a whole service user id"],
    ["src", "user:fe-bob", "not front-end user ids or names"],
    ["dst", "tool:", 'tool name after "tool:" is empty'],
    ["dst", "model:chat", 'the only model action is "model:invoke"'],
    ["dst", "tool:crm..update", 'tool name "crm..update"'],
    ["dst", "file:read", 'unknown kind "file"'],
  ])("%s %p → 422 invalid_pattern naming the bad part", async (field, value, words) => {
    const cp = await testControlPlane();
    const before = await revisionOf(cp);
    const res = await cp.call("POST", cp.org("/policies"), { body: { ...base, [field]: value } });
    expect(res.status).toBe(422);
    expect(res.json.code).toBe("invalid_pattern");
    expect(res.json.detail).toContain(words);
    expect(res.json.detail).toContain(`${field}-pattern`);
    expect(res.json.errors[0].path).toBe(`/${field}`);
    expect(await revisionOf(cp)).toBe(before);
  });

  test("user:<id> must name a service user of the organization or an installation of the workspace", async () => {
    const cp = await testControlPlane();
    const { installationId } = await agentAndInstallation(cp);
    const user = (await cp.call("POST", cp.org("/users"), { body: { email: "bea@example.com" } })).json;
    const create = async (src: string, workspace = "default") => cp.call("POST", cp.org("/policies"), { body: { ...base, src, workspace } });
    expect((await create(`user:${user.id}`)).status).toBe(201);
    expect((await create(`user:${installationId}`)).status).toBe(201);
    const before = await revisionOf(cp);
    const ghost = await create("user:usr_01M84G9RWQ7NJC1QNPZEE37AN2");
    expect([ghost.status, ghost.json.code, ghost.json.errors[0].path]).toEqual([422, "invalid_pattern", "/src"]);
    expect(ghost.json.detail).toContain("no service user usr_01M84G9RWQ7NJC1QNPZEE37AN2 in this organization");
    expect(await revisionOf(cp)).toBe(before);
    const deleted = await cp.call("DELETE", cp.org(`/installations/${installationId}`));
    expect(deleted.status).toBe(204);
    const gone = await create(`user:${installationId}`);
    expect([gone.status, gone.json.code]).toEqual([422, "invalid_pattern"]);
    expect(gone.json.detail).toContain(`no installation ${installationId} in this workspace`);
  });

  test("effect must be permit or deny; agent_id must be an agent of the workspace", async () => {
    const cp = await testControlPlane();
    const effect = await cp.call("POST", cp.org("/policies"), { body: { ...base, effect: "allow" } });
    expect(effect.status).toBe(422);
    expect(effect.json.code).toBe("validation_failed");
    expect((await cp.call("POST", cp.org("/policies"), { body: { ...base, effect: "deny" } })).status).toBe(201);
    expect((await cp.call("POST", cp.org("/policies"), { body: { ...base, agent_id: "agt_nope" } })).json.code).toBe("agent_not_found");
    await cp.call("POST", cp.org("/workspaces"), { body: { name: "other" } });
    const elsewhere = (await cp.call("POST", cp.org("/agents"), { body: { name: "x", workspace: "other" } })).json;
    const wrongWs = await cp.call("POST", cp.org("/policies"), { body: { ...base, agent_id: elsewhere.id } });
    expect(wrongWs.status).toBe(422);
    expect(wrongWs.json.errors[0].path).toBe("/agent_id");
    expect((await cp.call("POST", cp.org("/policies"), { body: { ...base, workspace: "nope" } })).json.code).toBe("workspace_not_found");
  });
});

describe("conditions and mode", () => {
  test("a condition and shadow mode are stored and returned", async () => {
    const cp = await testControlPlane();
    const res = await cp.call("POST", cp.org("/policies"), { body: { ...base, dst: "tool:crm.update", condition: "  args.amount <= 500  ", mode: "shadow" } });
    expect(res.status).toBe(201);
    expect([res.json.condition, res.json.mode]).toEqual(["args.amount <= 500", "shadow"]);
  });

  test.each([
    ["args.amount <=", "condition: line 1, column 13: found < but expecting end of input", { offset: 12, line: 1, column: 13 }],
    ["user.gruops.size() > 0", "condition: line 1, column 5: user has no field gruops (it has id, email, groups, attributes)", { offset: 4, line: 1, column: 5 }],
    ["args.a == 1 &&\n  'x' + 1 == 2", "condition: line 2, column 3: no such overload: string + int", { offset: 17, line: 2, column: 3 }],
    ["args.amount", null, null],
    ["1 + 1", "condition: line 1, column 1: the condition gives int, not bool", { offset: 0, line: 1, column: 1 }],
  ])("%p → 422 invalid_condition naming the position", async (condition, detail, position) => {
    const cp = await testControlPlane();
    const before = await revisionOf(cp);
    const res = await cp.call("POST", cp.org("/policies"), { body: { ...base, condition } });
    if (detail === null) {
      expect(res.status).toBe(201); // dyn: checked at run time
      return;
    }
    expect([res.status, res.json.code, res.json.detail]).toEqual([422, "invalid_condition", detail]);
    expect(res.json.errors[0]).toEqual({ path: "/condition", message: detail, position });
    expect(await revisionOf(cp)).toBe(before);
  });

  test("mode must be enforce or shadow", async () => {
    const cp = await testControlPlane();
    const res = await cp.call("POST", cp.org("/policies"), { body: { ...base, mode: "audit" } });
    expect([res.status, res.json.code]).toEqual([422, "validation_failed"]);
  });
});

describe("GET and DELETE /policies", () => {
  test("lists by workspace and by agent (its own and workspace-wide), and deletes", async () => {
    const cp = await testControlPlane();
    const a = await agentAndInstallation(cp);
    const b = await agentAndInstallation(cp);
    const wide = (await cp.call("POST", cp.org("/policies"), { body: base })).json;
    const forA = (await cp.call("POST", cp.org("/policies"), { body: { ...base, name: "a tool", dst: "tool:crm.update", agent_id: a.agentId } })).json;
    const user = (await cp.call("POST", cp.org("/users"), { body: { email: "bea@example.com" } })).json;
    const forB = (await cp.call("POST", cp.org("/policies"), { body: { ...base, name: "b tool", src: `user:${user.id}`, agent_id: b.agentId } })).json;
    expect([wide.id, forA.id, forB.id]).toEqual([expect.stringMatching(/^pol_/), expect.stringMatching(/^pol_/), expect.stringMatching(/^pol_/)]);
    const ids = async (q: string) => (await cp.call("GET", cp.org(`/policies${q}`))).json.policies.map((p: { id: string }) => p.id);
    expect(await ids("")).toEqual([wide.id, forA.id, forB.id]);
    expect(await ids("?workspace=default")).toEqual([wide.id, forA.id, forB.id]);
    expect(await ids(`?workspace=default&agent_id=${a.agentId}`)).toEqual([wide.id, forA.id]);
    expect((await cp.call("GET", cp.org("/policies?agent_id=agt_nope"))).status).toBe(404);
    // The bundle's view agrees with the listing.
    expect((await policiesForAgent(cp.deps.db, cp.workspaceId, a.agentId)).map((p) => p.id)).toEqual([wide.id, forA.id]);

    const before = await revisionOf(cp);
    const del = await cp.call("DELETE", cp.org(`/policies/${forA.id}`));
    expect(del.status).toBe(204);
    expect(await revisionOf(cp)).toBe(before + 1);
    expect(await ids(`?agent_id=${a.agentId}`)).toEqual([wide.id]);
    const again = await cp.call("DELETE", cp.org(`/policies/${forA.id}`));
    expect(again.status).toBe(404);
    expect(await revisionOf(cp)).toBe(before + 1);
  });
});

describe("unregistered tools, update, apply", () => {
  const apply = async (cp: Awaited<ReturnType<typeof testControlPlane>>, policies: Record<string, unknown>[], extra: Record<string, unknown> = {}) =>
    cp.call("POST", cp.org("/policies/apply"), { body: { workspace: "default", policies, ...extra } });

  test("a policy naming an unregistered tool is created with a warning, refused under strict", async () => {
    const cp = await testControlPlane();
    const res = await cp.call("POST", cp.org("/policies"), { body: { ...base, dst: "tool:crm.lookup" } });
    expect(res.status).toBe(201);
    expect(res.json.warnings).toEqual([expect.stringContaining('tool "crm.lookup" is not registered by any installation of this workspace')]);
    const before = await revisionOf(cp);
    const strict = await cp.call("POST", cp.org("/policies"), { body: { ...base, dst: "tool:crm.lookup", strict: true } });
    expect([strict.status, strict.json.code]).toEqual([422, "unregistered_tool"]);
    expect(await revisionOf(cp)).toBe(before);
    // model:invoke names no tool: no warning
    expect((await cp.call("POST", cp.org("/policies"), { body: base })).json.warnings).toEqual([]);
  });

  test("PATCH changes the fields given with the same checks, and bumps the revision", async () => {
    const cp = await testControlPlane();
    const p = (await cp.call("POST", cp.org("/policies"), { body: base })).json;
    const before = await revisionOf(cp);
    const res = await cp.call("PATCH", cp.org(`/policies/${p.id}`), { body: { condition: "'staff' in user.groups", mode: "shadow" } });
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ id: p.id, name: "staff may chat", src: "group:staff", condition: "'staff' in user.groups", mode: "shadow" });
    expect(await revisionOf(cp)).toBe(before + 1);
    const bad = await cp.call("PATCH", cp.org(`/policies/${p.id}`), { body: { condition: "user.nope" } });
    expect([bad.status, bad.json.code]).toEqual([422, "invalid_condition"]);
    const cleared = await cp.call("PATCH", cp.org(`/policies/${p.id}`), { body: { condition: null, mode: "enforce" } });
    expect([cleared.json.condition, cleared.json.mode]).toEqual([null, "enforce"]);
    expect((await cp.call("PATCH", cp.org("/policies/pol_nope"), { body: { mode: "shadow" } })).status).toBe(404);
  });

  test("conditions that could hold the proxy: over the cost estimate 422 condition_too_costly (POST, PATCH, apply), a backtracking pattern 422 invalid_condition; nothing written", async () => {
    const cp = await testControlPlane();
    const nested = "args.l.all(x, args.l.all(y, args.l.all(z, x + y + z >= 0)))";
    const p = (await cp.call("POST", cp.org("/policies"), { body: base })).json;
    const before = await revisionOf(cp);
    const tries = [
      await cp.call("POST", cp.org("/policies"), { body: { ...base, condition: nested } }),
      await cp.call("PATCH", cp.org(`/policies/${p.id}`), { body: { condition: nested } }),
      await apply(cp, [{ name: "nested", src: "group:staff", dst: "model:invoke", effect: "permit", condition: nested }]),
    ];
    for (const res of tries) {
      expect([res.status, res.json.code]).toEqual([422, "condition_too_costly"]);
      expect(res.json.cost).toEqual({ estimate: expect.any(Number), limit: 2000, part: nested });
      expect(res.json.cost.estimate).toBeGreaterThan(1e8);
      expect(res.json.detail).toContain(`the condition may cost ${res.json.cost.estimate} steps, over the limit of 2000`);
      expect(res.json.errors[0]).toMatchObject({ path: expect.stringMatching(/\/condition$/), position: { offset: 0, line: 1, column: 1 } });
    }
    const pattern = await cp.call("POST", cp.org("/policies"), { body: { ...base, condition: "args.q.matches('^(a+)+$')" } });
    expect([pattern.status, pattern.json.code]).toEqual([422, "invalid_condition"]);
    expect(pattern.json.detail).toBe(
      "condition: line 1, column 16: the pattern repeats a repetition ((a+)+), which backtracking engines (older svc proxies among them) take exponential time on; write it without the nesting",
    );
    expect(await revisionOf(cp)).toBe(before);
  });

  test("apply: a plan, then the change; the same file again changes nothing; dry run writes nothing", async () => {
    const cp = await testControlPlane();
    const old = (await cp.call("POST", cp.org("/policies"), { body: { ...base, name: "old one" } })).json;
    const kept = (await cp.call("POST", cp.org("/policies"), { body: { ...base, name: "kept" } })).json;
    const file = [
      { name: "kept", src: "group:staff", dst: "model:invoke", effect: "permit", condition: "'staff' in user.groups" },
      { name: "small credits", src: "group:sales", dst: "tool:crm.credit", effect: "permit", condition: "args.amount <= 500" },
    ];
    const before = await revisionOf(cp);
    const dry = await apply(cp, file, { dry_run: true });
    expect(dry.json).toEqual({
      plan: { create: [{ name: "small credits" }], update: [{ id: kept.id, name: "kept", changes: ["condition"] }], delete: [{ id: old.id, name: "old one" }] },
      applied: false,
      warnings: [expect.stringContaining('tool "crm.credit" is not registered')],
    });
    expect(await revisionOf(cp)).toBe(before);
    const done = await apply(cp, file);
    expect(done.json.applied).toBe(true);
    expect(done.json.plan).toEqual(dry.json.plan);
    expect(await revisionOf(cp)).toBe(before + 1);
    const listed = (await cp.call("GET", cp.org("/policies"))).json.policies;
    expect(listed.map((p: { name: string; condition: string | null }) => [p.name, p.condition]).sort()).toEqual([
      ["kept", "'staff' in user.groups"],
      ["small credits", "args.amount <= 500"],
    ]);
    expect(listed.find((p: { name: string }) => p.name === "kept").id).toBe(kept.id); // updated in place, not replaced
    const again = await apply(cp, file);
    expect(again.json).toMatchObject({ plan: { create: [], update: [], delete: [] }, applied: false });
    expect(await revisionOf(cp)).toBe(before + 1);
  });

  test("apply is all or nothing: one refused policy (checked after others were written) leaves every policy as it was", async () => {
    const cp = await testControlPlane();
    await cp.call("POST", cp.org("/policies"), { body: { ...base, name: "stays" } });
    const snapshot = async () => (await cp.call("GET", cp.org("/policies"))).json.policies;
    const before = { policies: await snapshot(), revision: await revisionOf(cp) };
    const res = await apply(cp, [
      { name: "new one", src: "*", dst: "model:invoke", effect: "permit" },
      { name: "stays", src: "*", dst: "model:invoke", effect: "deny" },
      { name: "ghost user", src: "user:usr_01M84G9RWQ7NJC1QNPZEE37AN2", dst: "model:invoke", effect: "permit" },
    ]);
    expect([res.status, res.json.code, res.json.errors[0].path]).toEqual([422, "invalid_pattern", "/policies/2/src"]);
    expect(await snapshot()).toEqual(before.policies);
    expect(await revisionOf(cp)).toBe(before.revision);
    // a bad condition or a duplicate name is refused before anything is read
    const cond = await apply(cp, [{ name: "x", src: "*", dst: "model:invoke", effect: "permit", condition: "1 +" }]);
    expect([cond.json.code, cond.json.errors[0].path]).toEqual(["invalid_condition", "/policies/0/condition"]);
    const dup = await apply(cp, [
      { name: "x", src: "*", dst: "model:invoke", effect: "permit" },
      { name: "x", src: "*", dst: "model:invoke", effect: "deny" },
    ]);
    expect([dup.status, dup.json.errors[0].path]).toEqual([422, "/policies/1/name"]);
    const strict = await apply(cp, [{ name: "t", src: "*", dst: "tool:nope.never", effect: "permit" }], { strict: true });
    expect(strict.json.code).toBe("unregistered_tool");
    expect(await snapshot()).toEqual(before.policies);
  });
});
