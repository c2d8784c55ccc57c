// The tool-server admin API (issue 13): validation with the model-endpoint URL rules and
// names that fit `<server>.<tool>`, 409s, sealed secrets only, assignment, readiness from the
// runtimes' heartbeats, and the bundle carrying the assigned servers. Role enforcement and
// cross-organization isolation are covered with every other route in
// organizations/role-enforcement.test.ts.
import { describe, expect, test } from "bun:test";
import { Decrypter } from "age-encryption";
import { eq } from "drizzle-orm";
import { agentAndInstallation, fakeReplica, revisionOf, sealKey } from "../auth/test-fixtures.ts";
import { tables } from "../db/index.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";

const http = { name: "github", transport: "http", url: "https://mcp.example.com/mcp/", workspace: "default" };
const stdio = { name: "time", transport: "stdio", command: "mcp-server-time", args: ["--local-timezone", "UTC"], workspace: "default" };

async function runtime(cp: TestControlPlane) {
  const { agentId, installationId } = await agentAndInstallation(cp);
  const token = (await cp.call("POST", cp.org(`/installations/${installationId}/credential`), { body: {} })).json.token as string;
  return { agentId, installationId, token };
}

async function heartbeat(cp: TestControlPlane, token: string, replicaId: string, toolServers?: unknown) {
  const body = {
    replica_id: replicaId,
    state: "ready",
    policy_revision: 1,
    tool_count: 1,
    version: "t",
    spool_depth: 0,
    last_success: null,
    ...(toolServers === undefined ? {} : { tool_servers: toolServers }),
  };
  return cp.call("POST", "/api/v1/runtime/heartbeat", { token, body });
}

describe("POST /tool-servers with auth oauth (issue 32)", () => {
  test("an http server only, without sealed secrets; an admin's client secret is kept KMS-wrapped and never shown; the bundle says oauth", async () => {
    const cp = await testControlPlane();
    const refused = async (body: Record<string, unknown>, path: string) => {
      const r = await cp.call("POST", cp.org("/tool-servers"), { body });
      expect(r.status).toBe(422);
      expect(r.json.errors[0].path).toBe(path);
    };
    await refused({ ...stdio, auth: "oauth" }, "/auth");
    await refused({ ...http, auth: "oauth", secrets_sealed: "YWdl", secret_names: ["Authorization"], sealed_to: ["rep_1"] }, "/secrets_sealed");
    await refused({ ...http, oauth_client_id: "c1" }, "/oauth_client_id");
    await refused({ ...http, auth: "oauth", oauth_client_secret: "s" }, "/oauth_client_secret");
    // Each user's own token is the identity: neither an assertion nor sealed secrets beside it.
    await refused({ ...http, auth: "oauth", assertion_header: "X-Svc-Identity" }, "/assertion_header");
    const SECRET = "admin-registered-client-secret-value";
    const res = await cp.call("POST", cp.org("/tool-servers"), { body: { ...http, auth: "oauth", oauth_client_id: "svc-client", oauth_client_secret: SECRET } });
    expect(res.status).toBe(201);
    expect(res.json.auth).toBe("oauth");
    expect(res.text).not.toContain(SECRET);
    const [row] = await cp.deps.db.select().from(tables(cp.deps.db).toolServerOauth);
    expect(row).toMatchObject({ registration: "admin", clientId: "svc-client" });
    expect(row!.clientSecretWrapped).toStartWith("kms1:");
    expect(row!.clientSecretWrapped).not.toContain(SECRET);
    const trail = await cp.call("GET", cp.org("/audit-records?kind=admin&action=tool_server.create"));
    expect(trail.text).not.toContain(SECRET);
    const grants = await cp.call("GET", cp.org(`/tool-servers/${res.json.id}/tokens`));
    expect(grants.json).toEqual({ grants: [] });
    // ... nor afterwards, by a change or by new secrets
    const sealed = { secrets_sealed: "YWdl", secret_names: ["Authorization"], sealed_to: ["rep_1"] };
    for (const [method, path, body, at] of [
      ["PATCH", `/tool-servers/${res.json.id}`, { assertion_header: "X-Svc-Identity" }, "/assertion_header"],
      ["PATCH", `/tool-servers/${res.json.id}`, sealed, "/secrets_sealed"],
      ["PUT", `/tool-servers/${res.json.id}/secrets`, sealed, "/secrets_sealed"],
    ] as const) {
      const r = await cp.call(method, cp.org(path), { body });
      expect(r.status).toBe(422);
      expect(r.json.errors[0]).toMatchObject({ path: at, message: expect.stringContaining("uses OAuth") });
    }
    const [after] = await cp.deps.db.select().from(tables(cp.deps.db).toolServers);
    expect(after).toMatchObject({ auth: "oauth", assertionHeader: null, secretsSealed: null });
    const plain = await cp.call("POST", cp.org("/tool-servers"), { body: { ...http, name: "plain" } });
    expect((await cp.call("GET", cp.org(`/tool-servers/${plain.json.id}/tokens`))).status).toBe(409);
  });
});

describe("POST /tool-servers", () => {
  test("creates an http and a stdio server; the URL is normalized; the revision moves; list, show by id and by name", async () => {
    const cp = await testControlPlane();
    const before = await revisionOf(cp);
    const res = await cp.call("POST", cp.org("/tool-servers"), { body: http });
    expect(res.status).toBe(201);
    expect(res.json).toEqual({
      id: expect.stringMatching(/^ts_/),
      name: "github",
      workspace_id: cp.workspaceId,
      transport: "http",
      url: "https://mcp.example.com/mcp",
      command: null,
      args: [],
      has_secrets: false,
      secret_names: [],
      sealed_to: [],
      allowed_tools: null,
      access_overrides: {},
      auth: "secrets",
      assertion: null,
      created_at: expect.any(String),
      assigned_agents: [],
    });
    expect(await revisionOf(cp)).toBeGreaterThan(before);
    const s = await cp.call("POST", cp.org("/tool-servers"), { body: { ...stdio, allowed_tools: ["get_current_time", "convert_time"], access_overrides: { convert_time: "write" } } });
    expect(s.status).toBe(201);
    expect(s.json).toMatchObject({
      transport: "stdio",
      url: null,
      command: "mcp-server-time",
      args: ["--local-timezone", "UTC"],
      allowed_tools: ["convert_time", "get_current_time"],
      access_overrides: { convert_time: "write" },
    });
    expect((await cp.call("GET", cp.org("/tool-servers?workspace=default"))).json.tool_servers.map((x: { name: string }) => x.name)).toEqual(["github", "time"]);
    expect((await cp.call("GET", cp.org("/tool-servers/github?workspace=default"))).json.id).toBe(res.json.id);
    expect((await cp.call("GET", cp.org(`/tool-servers/${s.json.id}`))).json.name).toBe("time");
    const missing = await cp.call("GET", cp.org("/tool-servers/nope"));
    expect(missing.status).toBe(404);
    expect(missing.json.detail).toContain("svc tool-servers list");
  });

  test("a second server of the same name in the workspace is a 409 naming the first; another workspace may reuse the name", async () => {
    const cp = await testControlPlane();
    const first = (await cp.call("POST", cp.org("/tool-servers"), { body: http })).json;
    const again = await cp.call("POST", cp.org("/tool-servers"), { body: { ...stdio, name: "github" } });
    expect(again.status).toBe(409);
    expect(again.json.code).toBe("conflict");
    expect(again.json.detail).toContain(first.id);
    await cp.call("POST", cp.org("/workspaces"), { body: { name: "other" } });
    expect((await cp.call("POST", cp.org("/tool-servers"), { body: { ...http, workspace: "other" } })).status).toBe(201);
    // The name now names two servers: without a workspace it is ambiguous.
    expect((await cp.call("GET", cp.org("/tool-servers/github"))).status).toBe(409);
    expect((await cp.call("GET", cp.org("/tool-servers/github?workspace=other"))).status).toBe(200);
  });

  test.each([
    ["http://mcp.example.com/mcp", "endpoint_not_https", "https"],
    ["https://user:pw@mcp.example.com/mcp", "endpoint_has_credentials", "sealed secret headers"],
    ["https://mcp.example.com/mcp?key=1", "endpoint_has_query", "query"],
    ["https://mcp.example.com/mcp#x", "endpoint_has_fragment", "fragment"],
    ["mcp.example.com", "invalid_endpoint", "not a URL"],
  ])("url %p → 422 %p, under the model endpoint rule", async (url, code, words) => {
    const cp = await testControlPlane();
    const res = await cp.call("POST", cp.org("/tool-servers"), { body: { ...http, url } });
    expect(res.status).toBe(422);
    expect(res.json.code).toBe(code);
    expect(res.json.detail).toContain(words);
    expect(res.json.detail).toStartWith("url");
    expect(res.json.errors[0].path).toBe("/url");
    expect(res.text).not.toContain(":pw@");
  });

  test.each([
    ["name with a dot (it would break <server>.<tool>)", { ...http, name: "git.hub" }, "/name"],
    ["name starting with a digit", { ...http, name: "1password" }, "/name"],
    ["name with a space", { ...http, name: "my server" }, "/name"],
    ["allowed tool with a control character", { ...http, allowed_tools: ["create\u0007issue"] }, "/allowed_tools/0"],
    ["override of a tool named longer than MCP names go", { ...http, access_overrides: { ["a".repeat(129)]: "read" } }, `/access_overrides/${"a".repeat(129)}`],
    ["override outside the allow-list", { ...http, allowed_tools: ["a"], access_overrides: { b: "read" } }, "/access_overrides"],
    ["http without url", { name: "x", transport: "http", workspace: "default" }, "/url"],
    ["http with a command", { ...http, command: "x" }, "/command"],
    ["stdio with a url", { ...stdio, url: "https://x.example.com" }, "/url"],
    ["stdio without command", { name: "x", transport: "stdio", workspace: "default" }, "/command"],
    ["stdio command with its arguments in it", { ...stdio, command: "uvx mcp-server-time" }, "/command"],
    ["plaintext secrets", { ...http, secrets: { Authorization: "Bearer ghp_plain" } }, "/secrets"],
    ["plaintext headers", { ...http, headers: { Authorization: "Bearer ghp_plain" } }, "/headers"],
    ["plaintext env", { ...stdio, env: { TOKEN: "ghp_plain" } }, "/env"],
    ["secret names without sealed secrets", { ...http, secret_names: ["Authorization"] }, "/secrets_sealed"],
  ])("%s → 422 naming %s", async (_what, body, path) => {
    const cp = await testControlPlane();
    const before = await revisionOf(cp);
    const res = await cp.call("POST", cp.org("/tool-servers"), { body });
    expect(res.status).toBe(422);
    expect(res.json.errors[0].path).toBe(path);
    expect(res.text).not.toContain("ghp_plain");
    expect(await revisionOf(cp)).toBe(before);
    expect((await cp.call("GET", cp.org("/tool-servers"))).json.tool_servers).toEqual([]);
  });

  test("an unknown transport is refused by the schema", async () => {
    const cp = await testControlPlane();
    const res = await cp.call("POST", cp.org("/tool-servers"), { body: { ...http, transport: "sse" } });
    expect(res.status).toBe(422);
    expect(res.json.code).toBe("validation_failed");
  });
});

describe("sealed secrets", () => {
  test("with no live runtime in the workspace the secrets are refused (409 no_runtime_recipient), before anything is stored", async () => {
    const cp = await testControlPlane();
    await agentAndInstallation(cp);
    const sealed = await sealKey(["age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"], '{"Authorization":"Bearer x"}');
    const res = await cp.call("POST", cp.org("/tool-servers"), { body: { ...http, secrets_sealed: sealed, secret_names: ["Authorization"], sealed_to: ["rep_x"] } });
    expect(res.status).toBe(409);
    expect(res.json.code).toBe("no_runtime_recipient");
    expect((await cp.call("GET", cp.org("/tool-servers"))).json.tool_servers).toEqual([]);
  });

  test("secrets sealed to live replicas are stored as ciphertext only; the runtime opens them from the bundle; bad forms are refused", async () => {
    const cp = await testControlPlane();
    const { installationId } = await agentAndInstallation(cp);
    const replica = await fakeReplica(cp, installationId);
    const doc = JSON.stringify({ Authorization: "Bearer ghp_sealed" });
    const sealed = await sealKey([replica.recipient], doc);
    const notAge = await cp.call("POST", cp.org("/tool-servers"), { body: { ...http, secrets_sealed: Buffer.from(doc).toString("base64"), secret_names: ["Authorization"], sealed_to: [replica.id] } });
    expect(notAge.status).toBe(422);
    expect(notAge.json.errors[0].path).toBe("/secrets_sealed");
    const ghost = await cp.call("POST", cp.org("/tool-servers"), { body: { ...http, secrets_sealed: sealed, secret_names: ["Authorization"], sealed_to: [replica.id, "rep_ghost"] } });
    expect(ghost.status).toBe(422);
    expect(ghost.json.detail).toContain("rep_ghost");
    const reserved = await cp.call("POST", cp.org("/tool-servers"), { body: { ...http, secrets_sealed: sealed, secret_names: ["Content-Type"], sealed_to: [replica.id] } });
    expect(reserved.status).toBe(422);
    expect(reserved.json.detail).toContain("MCP transport");
    const envName = await cp.call("POST", cp.org("/tool-servers"), { body: { ...stdio, secrets_sealed: sealed, secret_names: ["GITHUB-TOKEN"], sealed_to: [replica.id] } });
    expect(envName.status).toBe(422);
    expect(envName.json.detail).toContain("environment variable");

    const ok = await cp.call("POST", cp.org("/tool-servers"), { body: { ...http, secrets_sealed: sealed, secret_names: ["Authorization"], sealed_to: [replica.id] } });
    expect(ok.status).toBe(201);
    expect(ok.json).toMatchObject({ has_secrets: true, secret_names: ["Authorization"], sealed_to: [replica.id] });
    expect(ok.text).not.toContain(sealed);
    const s = tables(cp.deps.db).toolServers;
    const [row] = await cp.deps.db.select().from(s).where(eq(s.id, ok.json.id));
    expect(row!.secretsSealed).toBe(sealed);
    expect(JSON.stringify(row)).not.toContain("ghp_sealed");
    expect(row!.sealedRecipients).toEqual([replica.recipient]);
    const d = new Decrypter();
    d.addIdentity(replica.identity);
    expect(await d.decrypt(Buffer.from(row!.secretsSealed!, "base64"), "text")).toBe(doc);
  });

  test("PUT secrets re-seals to a new replica; readiness follows; the revision moves", async () => {
    const cp = await testControlPlane();
    const { agentId, installationId } = await agentAndInstallation(cp);
    const r1 = await fakeReplica(cp, installationId);
    const server = (
      await cp.call("POST", cp.org("/tool-servers"), { body: { ...stdio, secrets_sealed: await sealKey([r1.recipient], '{"TZ_TOKEN":"x"}'), secret_names: ["TZ_TOKEN"], sealed_to: [r1.id] } })
    ).json;
    await cp.call("POST", cp.org(`/tool-servers/${server.id}/assign`), { body: { agent_id: agentId } });
    const check = async (name: string) => (await cp.call("GET", cp.org(`/tool-servers/${server.id}/readiness`))).json.checks.find((c: { name: string }) => c.name === name);
    expect((await check("secrets_sealed_to_runtimes")).ok).toBe(true);
    const r2 = await fakeReplica(cp, installationId);
    const sealing = await check("secrets_sealed_to_runtimes");
    expect(sealing.ok).toBe(false);
    expect(sealing.detail).toContain(r2.id);
    expect(sealing.detail).toContain("svc tool-servers secrets time");
    const before = await revisionOf(cp);
    const put = await cp.call("PUT", cp.org(`/tool-servers/${server.id}/secrets`), {
      body: { secrets_sealed: await sealKey([r1.recipient, r2.recipient], '{"TZ_TOKEN":"y"}'), secret_names: ["TZ_TOKEN"], sealed_to: [r2.id, r1.id] },
    });
    expect(put.status).toBe(200);
    expect(put.json.sealed_to).toEqual([r1.id, r2.id].sort());
    expect(await revisionOf(cp)).toBeGreaterThan(before);
    expect((await check("secrets_sealed_to_runtimes")).ok).toBe(true);
    const plain = await cp.call("PUT", cp.org(`/tool-servers/${server.id}/secrets`), { body: { env: { TZ_TOKEN: "y" }, secrets_sealed: "x", secret_names: ["TZ_TOKEN"], sealed_to: [r1.id] } });
    expect(plain.json.errors[0].path).toBe("/env");
  });
});

describe("assignment, tools, deletion", () => {
  test("assign (idempotent), list an agent's servers, unassign, delete only when unassigned; every change moves the revision", async () => {
    const cp = await testControlPlane();
    const { agentId } = await agentAndInstallation(cp);
    const server = (await cp.call("POST", cp.org("/tool-servers"), { body: stdio })).json;
    let rev = await revisionOf(cp);
    const moved = async () => {
      const now = await revisionOf(cp);
      const did = now > rev;
      rev = now;
      return did;
    };
    expect((await cp.call("POST", cp.org(`/tool-servers/time/assign?workspace=default`), { body: { agent_id: agentId } })).json).toEqual({ agent_id: agentId, server_id: server.id, assigned: true });
    expect(await moved()).toBe(true);
    expect((await cp.call("POST", cp.org(`/tool-servers/${server.id}/assign`), { body: { agent_id: agentId } })).status).toBe(200);
    expect((await cp.call("GET", cp.org(`/tool-server-assignments?agent_id=${agentId}`))).json.tool_servers.map((s: { id: string }) => s.id)).toEqual([server.id]);
    expect((await cp.call("GET", cp.org(`/tool-servers/${server.id}`))).json.assigned_agents).toEqual([agentId]);
    await moved();

    const tools = await cp.call("PUT", cp.org(`/tool-servers/${server.id}/tools`), { body: { allowed_tools: ["get_current_time"], access_overrides: { get_current_time: "write" } } });
    expect(tools.json).toMatchObject({ allowed_tools: ["get_current_time"], access_overrides: { get_current_time: "write" } });
    expect(await moved()).toBe(true);
    expect((await cp.call("PUT", cp.org(`/tool-servers/${server.id}/tools`), { body: { allowed_tools: null, access_overrides: { "bad\nname": "read" } } })).status).toBe(422);

    const blocked = await cp.call("DELETE", cp.org(`/tool-servers/${server.id}`));
    expect(blocked.status).toBe(409);
    expect(blocked.json.detail).toContain(agentId);
    expect(blocked.json.detail).toContain("unassign");
    expect(await moved()).toBe(false);

    await cp.call("POST", cp.org("/workspaces"), { body: { name: "other" } });
    const foreign = (await cp.call("POST", cp.org("/agents"), { body: { name: "elsewhere", workspace: "other" } })).json;
    expect((await cp.call("POST", cp.org(`/tool-servers/${server.id}/assign`), { body: { agent_id: foreign.id } })).status).toBe(422);
    expect((await cp.call("POST", cp.org(`/tool-servers/${server.id}/assign`), { body: { agent_id: "agt_nope" } })).json.code).toBe("agent_not_found");

    expect((await cp.call("DELETE", cp.org(`/tool-servers/${server.id}/assignments/${agentId}`))).json).toEqual({ agent_id: agentId, server_id: server.id, assigned: false });
    expect(await moved()).toBe(true);
    expect((await cp.call("DELETE", cp.org(`/tool-servers/${server.id}/assignments/${agentId}`))).status).toBe(404);
    expect((await cp.call("DELETE", cp.org(`/tool-servers/${server.id}`))).status).toBe(204);
    expect(await moved()).toBe(true);
    expect((await cp.call("GET", cp.org(`/tool-servers/${server.id}`))).status).toBe(404);
    expect((await cp.call("POST", cp.org("/tool-servers"), { body: stdio })).status).toBe(201);
  });
});

describe("runtime status and readiness", () => {
  test("heartbeats carry each server's state; readiness names unreachable and silent replicas and is ready once every live replica reached it", async () => {
    const cp = await testControlPlane();
    const rt = await runtime(cp);
    const server = (await cp.call("POST", cp.org("/tool-servers"), { body: http })).json;
    const readiness = async () => (await cp.call("GET", cp.org(`/tool-servers/${server.id}/readiness`))).json;
    let r = await readiness();
    expect(r.checks.map((c: { name: string }) => c.name)).toEqual(["endpoint_valid", "secrets_sealed_to_runtimes", "assigned_to_agent", "runtime_in_scope", "runtimes_reach_server", "tools_servable"]);
    expect(r.ready).toBe(false);
    expect(r.runtimes).toEqual([]);

    const a = await fakeReplica(cp, rt.installationId);
    const b = await fakeReplica(cp, rt.installationId);
    await cp.call("POST", cp.org(`/tool-servers/${server.id}/assign`), { body: { agent_id: rt.agentId } });
    expect((await heartbeat(cp, rt.token, a.id, [{ name: "github", state: "ok", error: null, tool_count: 4 }])).status).toBe(204);
    expect((await heartbeat(cp, rt.token, b.id, [{ name: "github", state: "unreachable", error: "connect ECONNREFUSED", tool_count: 0 }])).status).toBe(204);
    r = await readiness();
    expect(r.ready).toBe(false);
    const reach = r.checks.find((c: { name: string }) => c.name === "runtimes_reach_server");
    expect(reach.ok).toBe(false);
    expect(reach.detail).toContain(`${b.id} (connect ECONNREFUSED)`);
    expect(reach.detail).toContain("serve none of its tools");
    const byReplica = Object.fromEntries(r.runtimes.map((x: { replica_id: string }) => [x.replica_id, x]));
    expect(byReplica[a.id]).toMatchObject({ installation_id: rt.installationId, state: "ok", error: null, tool_count: 4, last_heartbeat_at: expect.any(String) });
    expect(byReplica[b.id]).toMatchObject({ state: "unreachable", error: "connect ECONNREFUSED", tool_count: 0 });

    // The installation's status carries each replica's latest report.
    const replicas = (await cp.call("GET", cp.org(`/installations/${rt.installationId}`))).json.replicas as Array<{ id: string; tool_servers: unknown }>;
    expect(replicas.find((x) => x.id === b.id)!.tool_servers).toEqual([{ name: "github", state: "unreachable", error: "connect ECONNREFUSED", tool_count: 0 }]);

    // A heartbeat without the server (or without tool_servers at all): not reported yet.
    await heartbeat(cp, rt.token, b.id);
    r = await readiness();
    expect(r.runtimes.find((x: { replica_id: string }) => x.replica_id === b.id).state).toBe("not_reported");
    expect(r.checks.find((c: { name: string }) => c.name === "runtimes_reach_server").detail).toContain(`not reported yet by ${b.id}`);

    await heartbeat(cp, rt.token, b.id, [{ name: "github", state: "ok", error: null, tool_count: 4 }]);
    r = await readiness();
    expect(r.ready).toBe(true);
    expect(r.checks.find((c: { name: string }) => c.name === "runtimes_reach_server").detail).toContain(`${a.id}: 4 tool(s)`);
  });

  test("a malformed tool_servers report is refused by the heartbeat schema", async () => {
    const cp = await testControlPlane();
    const rt = await runtime(cp);
    const a = await fakeReplica(cp, rt.installationId);
    expect((await heartbeat(cp, rt.token, a.id, [{ name: "github", state: "down", error: null, tool_count: 1 }])).status).toBe(422);
    expect((await heartbeat(cp, rt.token, a.id, [{ name: "github", state: "ok", error: null, tool_count: -1 }])).status).toBe(422);
    expect((await heartbeat(cp, rt.token, a.id, [{ name: "github", state: "ok", tool_count: 1 }])).status).toBe(422);
  });
});

describe("the policy bundle", () => {
  test("carries the servers assigned to the installation's agent, secrets sealed, sorted by name; not other agents'", async () => {
    const cp = await testControlPlane();
    const rt = await runtime(cp);
    const other = await runtime(cp);
    const replica = await fakeReplica(cp, rt.installationId);
    const sealed = await sealKey([replica.recipient], '{"Authorization":"Bearer ghp_bundle"}');
    const gh = (
      await cp.call("POST", cp.org("/tool-servers"), { body: { ...http, secrets_sealed: sealed, secret_names: ["Authorization"], sealed_to: [replica.id], access_overrides: { list_issues: "read" } } })
    ).json;
    const time = (await cp.call("POST", cp.org("/tool-servers"), { body: { ...stdio, allowed_tools: ["get_current_time"] } })).json;
    const unassigned = (await cp.call("POST", cp.org("/tool-servers"), { body: { ...stdio, name: "unused" } })).json;
    const bundle = async (token: string) => (await cp.call("GET", "/api/v1/runtime/policy-bundle?version=2", { token })).json;
    expect((await bundle(rt.token)).tool_servers).toEqual([]);

    const etag = (await cp.call("GET", "/api/v1/runtime/policy-bundle?version=2", { token: rt.token })).headers.get("etag");
    for (const s of [time, gh]) await cp.call("POST", cp.org(`/tool-servers/${s.id}/assign`), { body: { agent_id: rt.agentId } });
    await cp.call("POST", cp.org(`/tool-servers/${unassigned.id}/assign`), { body: { agent_id: other.agentId } });
    const got = await cp.call("GET", "/api/v1/runtime/policy-bundle?version=2", { token: rt.token, headers: { "if-none-match": etag! } });
    expect(got.status).toBe(200);
    expect(got.json.tool_servers).toEqual([
      {
        id: gh.id,
        name: "github",
        transport: "http",
        url: "https://mcp.example.com/mcp",
        command: null,
        args: [],
        secrets_sealed: sealed,
        allowed_tools: null,
        access_overrides: { list_issues: "read" },
      },
      {
        id: time.id,
        name: "time",
        transport: "stdio",
        url: null,
        command: "mcp-server-time",
        args: ["--local-timezone", "UTC"],
        secrets_sealed: null,
        allowed_tools: ["get_current_time"],
        access_overrides: {},
      },
    ]);
    expect(got.text).not.toContain("ghp_bundle");
    expect((await bundle(other.token)).tool_servers.map((s: { name: string }) => s.name)).toEqual(["unused"]);
    // v1 runtimes get the same servers.
    expect((await cp.call("GET", "/api/v1/runtime/policy-bundle?version=1", { token: rt.token })).json.tool_servers).toHaveLength(2);

    // Unassigned: gone from the next bundle.
    await cp.call("DELETE", cp.org(`/tool-servers/${gh.id}/assignments/${rt.agentId}`));
    expect((await bundle(rt.token)).tool_servers.map((s: { name: string }) => s.name)).toEqual(["time"]);
  });
});
