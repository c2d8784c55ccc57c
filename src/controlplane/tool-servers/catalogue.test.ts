// MCP tools belong to the agent (issue 31): what each installation's runtimes list is stored
// per installation and server (PUT /runtime/mcp-tools), and every bundle of the agent carries
// the union, with the server's current allow-list and overrides; two installations of one
// agent never conflict; a tool:<server>.* policy reaches the proxy as exact names; names of
// any form, Object.prototype's included, are names.
import { describe, expect, test } from "bun:test";
import { agentAndInstallation, revisionOf } from "../auth/test-fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";

type Listed = { name: string; upstream: string; access: "read" | "write" };

async function installation(cp: TestControlPlane, agentId?: string) {
  let ids: { agentId: string; installationId: string };
  if (agentId) {
    const inst = await cp.call("POST", cp.org("/installations"), { body: { platform: "chatui", name: `bot-${Math.random().toString(36).slice(2, 8)}`, agent_id: agentId, workspace: "default" } });
    ids = { agentId, installationId: inst.json.id };
  } else ids = await agentAndInstallation(cp);
  const token = (await cp.call("POST", cp.org(`/installations/${ids.installationId}/credential`), { body: {} })).json.token as string;
  return { ...ids, token };
}

const report = async (cp: TestControlPlane, token: string, servers: Array<{ server: string; tools: Listed[]; skipped?: Array<{ tool: string; why: string }> }>) =>
  cp.call("PUT", "/api/v1/runtime/mcp-tools", { token, body: { servers: servers.map((s) => ({ skipped: [], ...s })) } });
const bundle = async (cp: TestControlPlane, token: string) => (await cp.call("GET", "/api/v1/runtime/policy-bundle?version=2&conditions=1", { token })).json;
const t = (server: string, upstream: string, access: "read" | "write" = "read", name = `${server}.${upstream}`): Listed => ({ name, upstream, access });

describe("the agent's MCP tool catalogue", () => {
  test("two installations of one agent report the same server's tools: no conflict, each bundle carries the union; a crash reports nothing and removes nothing", async () => {
    const cp = await testControlPlane();
    const a = await installation(cp);
    const b = await installation(cp, a.agentId);
    const other = await installation(cp); // another agent
    expect((await cp.call("POST", cp.org("/tool-servers"), { body: { name: "everything", transport: "stdio", command: "mcp-server-everything", workspace: "default" } })).status).toBe(201);
    await cp.call("POST", cp.org("/tool-servers/everything/assign?workspace=default"), { body: { agent_id: a.agentId } });
    const before = await revisionOf(cp);
    const ra = await report(cp, a.token, [{ server: "everything", tools: [t("everything", "get-sum"), t("everything", "echo", "write")] }]);
    expect(ra.status).toBe(200);
    expect(ra.json).toEqual({ changed: true, unknown_servers: [] });
    expect(await revisionOf(cp)).toBeGreaterThan(before);
    // B lists the same tools and one more (a newer image): no 409
    const rb = await report(cp, b.token, [{ server: "everything", tools: [t("everything", "get-sum"), t("everything", "echo", "write"), t("everything", "new-tool")] }]);
    expect(rb.status).toBe(200);
    for (const who of [a, b]) {
      const tools = (await bundle(cp, who.token)).tools.filter((x: { server?: string }) => x.server);
      expect(tools).toEqual([
        { name: "everything.echo", access: "write", required_capabilities: [], server: "everything", upstream: "echo" },
        { name: "everything.get-sum", access: "read", required_capabilities: [], server: "everything", upstream: "get-sum" },
        { name: "everything.new-tool", access: "read", required_capabilities: [], server: "everything", upstream: "new-tool" },
      ]);
    }
    // the installation's tools as the admin sees them (svc bot status --tools): the same, with server and upstream name
    expect((await cp.call("GET", cp.org(`/installations/${b.installationId}/tools`))).json.tools).toEqual((await bundle(cp, b.token)).tools);
    expect((await cp.call("GET", cp.org(`/installations/${other.installationId}/tools`))).json.tools).toEqual([]);
    // another agent's installation gets none of them, and its report of an unassigned server is not taken
    expect((await bundle(cp, other.token)).tools).toEqual([]);
    expect((await report(cp, other.token, [{ server: "everything", tools: [t("everything", "x")] }])).json).toEqual({ changed: false, unknown_servers: ["everything"] });
    // the same report again changes nothing, not even the revision
    const r0 = await revisionOf(cp);
    expect((await report(cp, a.token, [{ server: "everything", tools: [t("everything", "echo", "write"), t("everything", "get-sum")] }])).json.changed).toBe(false);
    expect(await revisionOf(cp)).toBe(r0);
  });

  test("the allow-list and the overrides apply when the bundle is made; Object.prototype's names are names; a pack tool of the same name wins", async () => {
    const cp = await testControlPlane();
    const a = await installation(cp);
    const created = await cp.call("POST", cp.org("/tool-servers"), {
      body: { name: "odd", transport: "stdio", command: "odd-server", workspace: "default", access_overrides: JSON.parse('{"toString": "write", "__proto__": "write", "plain": "write"}') },
    });
    expect(created.status).toBe(201);
    expect(Object.keys(created.json.access_overrides).sort()).toEqual(["__proto__", "plain", "toString"]);
    await cp.call("POST", cp.org("/tool-servers/odd/assign?workspace=default"), { body: { agent_id: a.agentId } });
    const names = ["toString", "constructor", "valueOf", "__proto__", "hasOwnProperty", "plain"];
    expect((await report(cp, a.token, [{ server: "odd", tools: [...names.map((n) => t("odd", n)), t("odd", "files.read", "read", "odd.files--2eread")] }])).status).toBe(200);
    const tools = new Map<string, { access: string; upstream: string }>((await bundle(cp, a.token)).tools.map((x: { name: string; access: string; upstream: string }) => [x.name, x]));
    expect([...tools.keys()].sort()).toEqual([...names.map((n) => `odd.${n}`), "odd.files--2eread"].sort());
    expect(tools.get("odd.toString")!.access).toBe("write");
    expect(tools.get("odd.__proto__")!.access).toBe("write");
    expect(tools.get("odd.constructor")!.access).toBe("read");
    expect(tools.get("odd.valueOf")!.access).toBe("read");
    expect(tools.get("odd.files--2eread")!.upstream).toBe("files.read");
    // the allow-list applies at once, without a new listing
    await cp.call("PUT", cp.org("/tool-servers/odd/tools?workspace=default"), { body: { allowed_tools: ["constructor"], access_overrides: {} } });
    expect((await bundle(cp, a.token)).tools.map((x: { name: string }) => x.name)).toEqual(["odd.constructor"]);
    // show: every listed tool, served or why not
    const shown = (await cp.call("GET", cp.org("/tool-servers/odd?workspace=default"))).json.tools as Array<{ name: string; served: boolean; why: string | null; installations: string[] }>;
    expect(shown.find((x) => x.name === "odd.constructor")).toMatchObject({ served: true, why: null, installations: [a.installationId] });
    expect(shown.find((x) => x.name === "odd.toString")).toMatchObject({ served: false, why: "not in allowed_tools" });
    // a pack tool named like an MCP tool wins in that installation's bundle
    await cp.call("PUT", "/api/v1/runtime/tools", { token: a.token, body: { tools: [{ name: "odd.constructor", access: "write", required_capabilities: [] }] } });
    expect((await bundle(cp, a.token)).tools).toEqual([{ name: "odd.constructor", access: "write", required_capabilities: [] }]);
    expect((await cp.call("GET", cp.org(`/installations/${a.installationId}/tools`))).json.tools).toEqual([{ name: "odd.constructor", access: "write", required_capabilities: [] }]);
    // the collision is named, not silent: show and readiness say the pack's tool is served instead
    const after = (await cp.call("GET", cp.org("/tool-servers/odd?workspace=default"))).json.tools as Array<{ name: string; served: boolean; why: string | null }>;
    expect(after.find((x) => x.name === "odd.constructor")).toMatchObject({
      served: false,
      why: `a pack's tool of the same name, registered by installation ${a.installationId}, is served there instead; give the server another name or rename the pack's tool`,
    });
    const ready = (await cp.call("GET", cp.org("/tool-servers/odd/readiness?workspace=default"))).json;
    expect(ready.skipped_tools).toContainEqual({ tool: "constructor", why: expect.stringContaining("a pack's tool of the same name"), installation_id: a.installationId });
    expect(ready.checks.find((c: { name: string }) => c.name === "tools_servable").ok).toBe(false);
  });

  test("a tool:<server>.* policy reaches the proxy as one policy per registered tool of that server, under its id; a deny too", async () => {
    const cp = await testControlPlane();
    const a = await installation(cp);
    await cp.call("POST", cp.org("/tool-servers"), { body: { name: "everything", transport: "stdio", command: "x", workspace: "default" } });
    await cp.call("POST", cp.org("/tool-servers/everything/assign?workspace=default"), { body: { agent_id: a.agentId } });
    const permit = await cp.call("POST", cp.org("/policies"), { body: { name: "all of everything", src: "*", dst: "tool:everything.*", effect: "permit", agent_id: a.agentId, workspace: "default" } });
    expect(permit.status).toBe(201);
    expect(permit.json.dst).toBe("tool:everything.*");
    const deny = await cp.call("POST", cp.org("/policies"), {
      body: { name: "no everything for usr", src: "*", dst: "tool:everything.*", effect: "deny", condition: "args.a > 100", agent_id: a.agentId, workspace: "default" },
    });
    expect(deny.status).toBe(201);
    expect((await bundle(cp, a.token)).policies).toEqual([]); // no tool registered yet: nothing to decide
    await report(cp, a.token, [{ server: "everything", tools: [t("everything", "get-sum"), t("everything", "echo")] }]);
    const policies = (await bundle(cp, a.token)).policies as Array<{ id: string; dst: string; effect: string; condition?: string }>;
    expect(policies.map((p) => [p.id, p.dst, p.effect, p.condition ?? null])).toEqual(
      [
        [permit.json.id, "tool:everything.echo", "permit", null],
        [permit.json.id, "tool:everything.get-sum", "permit", null],
        [deny.json.id, "tool:everything.echo", "deny", "args.a > 100"],
        [deny.json.id, "tool:everything.get-sum", "deny", "args.a > 100"],
      ].sort((x, y) => (x[0]! < y[0]! ? -1 : x[0]! > y[0]! ? 1 : 0)),
    );
  });

  test("readiness names the tools a runtime could not serve, with why, and is not ready for them", async () => {
    const cp = await testControlPlane();
    const a = await installation(cp);
    await cp.call("POST", cp.org("/tool-servers"), { body: { name: "dup", transport: "stdio", command: "x", workspace: "default" } });
    await cp.call("POST", cp.org("/tool-servers/dup/assign?workspace=default"), { body: { agent_id: a.agentId } });
    await report(cp, a.token, [{ server: "dup", tools: [t("dup", "ok")], skipped: [{ tool: "twice", why: 'the server lists 2 tools named "twice"; svc serves neither' }] }]);
    const r = (await cp.call("GET", cp.org("/tool-servers/dup/readiness?workspace=default"))).json;
    expect(r.ready).toBe(false);
    expect(r.checks.find((c: { name: string }) => c.name === "tools_servable")).toMatchObject({ ok: false, detail: expect.stringContaining('"twice" (the server lists 2 tools named') });
    expect(r.skipped_tools).toEqual([{ tool: "twice", why: 'the server lists 2 tools named "twice"; svc serves neither', installation_id: a.installationId }]);
    // deleting the server forgets what was listed (it must be unassigned first)
    await cp.call("DELETE", cp.org(`/tool-servers/dup/assignments/${a.agentId}?workspace=default`));
    expect((await cp.call("DELETE", cp.org("/tool-servers/dup?workspace=default"))).status).toBe(204);
  });

  test("a malformed report is refused by its schema, naming the field", async () => {
    const cp = await testControlPlane();
    const a = await installation(cp);
    const bad = await report(cp, a.token, [{ server: "x", tools: [{ name: "no dot here", upstream: "u", access: "read" }] }]);
    expect(bad.status).toBe(422);
  });
});
