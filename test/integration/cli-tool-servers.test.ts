// svc tool-servers create|list|show|assign|unassign|tools|secrets|readiness|delete against a real
// control plane (issue 13). Secrets are read from stdin, sealed to the scope's runtimes, and only
// ciphertext reaches the control plane; the runtime's bundle carries them and its own key opens them.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Decrypter } from "age-encryption";
import { type ControlPlaneProcess, cleanup, startControlPlane } from "../support/controlplane-process.ts";
import { api, bootstrapRuntime, createAgent, createInstallation, filesHolding, org, svc } from "./cli-support.ts";

let cp: ControlPlaneProcess;
beforeAll(async () => {
  cp = await startControlPlane();
});
afterAll(async () => {
  await cp?.stop();
  if (cp) cleanup(cp.dataDir);
});

const names = async () => (await api(cp, "GET", org(cp, "/tool-servers?workspace=default"))).json.tool_servers.map((s: { name: string }) => s.name) as string[];

test("create a stdio server with args, an allow-list and an access override, assigned; list and show it", async () => {
  const agent = await createAgent(cp);
  const r = await svc(cp, [
    "tool-servers",
    "create",
    "time",
    "--command",
    "mcp-server-time",
    "--args=--local-timezone,UTC",
    "--allow",
    "get_current_time,convert_time",
    "--access",
    "convert_time=write",
    "--agent",
    agent,
    "--workspace",
    "default",
    "--json",
  ]);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  const s = JSON.parse(r.stdout);
  expect(s).toMatchObject({
    name: "time",
    transport: "stdio",
    command: "mcp-server-time",
    args: ["--local-timezone", "UTC"],
    allowed_tools: ["convert_time", "get_current_time"],
    access_overrides: { convert_time: "write" },
    assigned_agents: [agent],
  });

  const list = await svc(cp, ["tool-servers", "list", "--workspace", "default"]);
  expect(list.code).toBe(0);
  expect(list.stdout).toMatch(/^ID\s+NAME\s+TRANSPORT\s+ENDPOINT\s+SECRETS\s+TOOLS\n/);
  expect(list.stdout).toContain("mcp-server-time --local-timezone UTC");

  const shown = await svc(cp, ["tool-servers", "show", "time", "--workspace", "default"]);
  expect(shown.code).toBe(0);
  expect(shown.stdout).toContain("tool:time.<tool>");
  expect(shown.stdout).toContain(`assigned to:      ${agent}\n`);
  expect(shown.stdout).toContain("convert_time=write");
  expect(shown.stdout).toContain("No live runtime replica in scope.");

  const dup = await svc(cp, ["tool-servers", "create", "time", "--url", "https://mcp.example.com/mcp", "--workspace", "default"]);
  expect(dup.code).toBe(1);
  expect(dup.stderr.trim()).toMatch(/^svc tool-servers create: .*"time" already exists in workspace "default" \(ts_\w+\).* \(conflict\)$/);
});

test.each([
  [["--url", "http://mcp.example.com/mcp"], "url must use https", "endpoint_not_https"],
  [["--url", "https://u:p@mcp.example.com/mcp"], "url must not contain credentials", "endpoint_has_credentials"],
  [["--url", "https://mcp.example.com/mcp?k=1"], "url must not have a query string", "endpoint_has_query"],
  [["--url", "https://a.example.com/mcp", "--command", "x"], "pass --url (an http server) or --command", null],
  [["--command", "uvx mcp-server-time"], "holds whitespace", null],
  [["--url", "https://a.example.com/mcp", "--allow", "x".repeat(129)], "must be the name the MCP server lists: 1 to 128 characters", null],
  [["--url", "https://a.example.com/mcp", "--access", "create_issue=admin"], "is not tool=read or tool=write", null],
  [["--command", "mcp-server-time", "--bearer"], "--bearer is for http servers", null],
])("create %p is a usage error before any call: %s", async (flags, words, code) => {
  const r = await svc(cp, ["tool-servers", "create", "bad", ...flags, "--workspace", "default"], { stdin: "ghp_never_read\n" });
  expect(r.code).toBe(2);
  expect(r.stdout).toBe("");
  expect(r.stderr).toStartWith("svc tool-servers create: ");
  expect(r.stderr).toContain(words);
  if (code) expect(r.stderr).toContain(`(${code})`);
  expect(r.stderr).toContain("\nUsage: svc tool-servers create <name> --workspace <workspace>");
  expect(r.stderr).not.toContain("u:p@");
  expect(await names()).not.toContain("bad");
});

test("show lists the tools the runtimes listed, governed and upstream names, served or why not; bot status --tools lists the installation's", async () => {
  const agent = await createAgent(cp);
  const inst = await createInstallation(cp, agent);
  const rt = await bootstrapRuntime(cp, inst.id);
  // Upstream names with "-" (kept) and "." (escaped); the allow-list names them as the server does.
  expect((await svc(cp, ["tool-servers", "create", "everything", "--command", "mcp-server-everything", "--allow", "echo,get-sum,files.read", "--agent", agent, "--workspace", "default"])).code).toBe(
    0,
  );
  const listed = [
    { name: "everything.echo", upstream: "echo", access: "read" },
    { name: "everything.get-sum", upstream: "get-sum", access: "read" },
    { name: "everything.files--2eread", upstream: "files.read", access: "read" },
    { name: "everything.trigger-long-running-operation", upstream: "trigger-long-running-operation", access: "write" },
  ];
  // A name the server chose with a terminal escape in it: shown escaped, never sent to the terminal.
  const skipped = [{ tool: "twice\x1b[2J", why: "the server lists 2 tools named so; svc serves neither" }];
  expect((await api(cp, "PUT", "/runtime/mcp-tools", { servers: [{ server: "everything", tools: listed, skipped }] }, rt.token)).status).toBe(200);

  const shown = await svc(cp, ["tool-servers", "show", "everything", "--workspace", "default"]);
  expect(shown.code).toBe(0);
  expect(shown.stdout).toMatch(/^TOOL\s+UPSTREAM\s+ACCESS\s+SERVED$/m);
  expect(shown.stdout).toMatch(/^everything\.get-sum\s+get-sum\s+read\s+yes$/m);
  expect(shown.stdout).toMatch(/^everything\.files--2eread\s+files\.read\s+read\s+yes$/m);
  expect(shown.stdout).toMatch(/^everything\.trigger-long-running-operation\s+trigger-long-running-operation\s+write\s+no: not in allowed_tools$/m);
  expect(shown.stdout).toMatch(/^-\s+twice\\x1b\[2J\s+write\s+no: the server lists 2 tools named so; svc serves neither$/m);
  expect(shown.stdout).not.toContain("\x1b");
  const json = JSON.parse((await svc(cp, ["tool-servers", "show", "everything", "--workspace", "default", "--json"])).stdout);
  expect(json.tools.find((t: { upstream: string }) => t.upstream === "get-sum")).toEqual({
    name: "everything.get-sum",
    upstream: "get-sum",
    access: "read",
    served: true,
    why: null,
    installations: [inst.id],
  });

  const status = await svc(cp, ["bot", "status", "--installation", inst.id, "--tools"]);
  expect(status.code).toBe(0);
  expect(status.stdout).toMatch(/^TOOL\s+ACCESS\s+FROM\s+UPSTREAM$/m);
  expect(status.stdout).toMatch(/^everything\.echo\s+read\s+mcp everything\s+echo$/m);
  expect(status.stdout).toMatch(/^everything\.files--2eread\s+read\s+mcp everything\s+files\.read$/m);
  expect(status.stdout).not.toContain("trigger-long-running-operation"); // outside the allow-list: not served, not listed
  expect((await svc(cp, ["bot", "status", "--installation", inst.id])).stdout).not.toContain("everything.echo");
  const sj = JSON.parse((await svc(cp, ["bot", "status", "--installation", inst.id, "--tools", "--json"])).stdout);
  expect(sj.tools.map((t: { name: string }) => t.name)).toEqual(["everything.echo", "everything.files--2eread", "everything.get-sum"]);
  expect(sj.tools[2]).toEqual({ name: "everything.get-sum", access: "read", required_capabilities: [], server: "everything", upstream: "get-sum" });
});

test("a server name that cannot prefix <server>.<tool> is refused", async () => {
  const r = await svc(cp, ["tool-servers", "create", "git.hub", "--url", "https://a.example.com/mcp", "--workspace", "default"]);
  expect(r.code).toBe(2);
  expect(r.stderr).toContain('server name "git.hub" must start with a letter');
});

test("--bearer with no runtime in the scope is refused before stdin is read; nothing is created", async () => {
  const agent = await createAgent(cp);
  await createInstallation(cp, agent);
  const token = `ghp_${crypto.randomUUID()}`;
  const r = await svc(cp, ["tool-servers", "create", "lonely", "--url", "https://mcp.example.com/mcp", "--bearer", "--agent", agent, "--workspace", "default"], { stdin: `${token}\n` });
  expect(r.code).toBe(1);
  expect(r.stderr.trim()).toMatch(/^svc tool-servers create: no runtime in workspace default \(agent agt_\w+\) can receive the secrets.*start a runtime.*\(no_runtime_recipient\)$/);
  expect(r.stdout + r.stderr).not.toContain(token);
  expect(await names()).not.toContain("lonely");
});

test("--bearer seals Authorization to the runtimes; the bundle carries it; the runtime opens it; the control plane never holds it", async () => {
  const agent = await createAgent(cp);
  const inst = await createInstallation(cp, agent);
  const rt = await bootstrapRuntime(cp, inst.id);
  const token = `ghp_${crypto.randomUUID()}`;
  const r = await svc(cp, ["tool-servers", "create", "github", "--url", "https://mcp.example.com/mcp/", "--bearer", "--agent", agent, "--workspace", "default", "--json"], { stdin: `${token}\n` });
  expect(r.code).toBe(0);
  const s = JSON.parse(r.stdout);
  expect(s).toMatchObject({ url: "https://mcp.example.com/mcp", has_secrets: true, secret_names: ["Authorization"], sealed_to: expect.arrayContaining([rt.replica]) });
  expect(r.stderr).toContain("Sealed 1 secret(s) (Authorization)");
  expect(r.stdout + r.stderr).not.toContain(token);

  const bundle = await api(cp, "GET", "/runtime/policy-bundle?version=2", undefined, rt.token);
  const entry = bundle.json.tool_servers.find((x: { name: string }) => x.name === "github");
  expect(entry).toMatchObject({ id: s.id, transport: "http", url: "https://mcp.example.com/mcp", command: null });
  const d = new Decrypter();
  d.addIdentity(rt.identity);
  expect(JSON.parse(await d.decrypt(Buffer.from(entry.secrets_sealed, "base64"), "text"))).toEqual({ Authorization: `Bearer ${token}` });
  expect(filesHolding(cp.dataDir, token)).toEqual([]);

  // New values through `secrets`: NAME=value lines, sealed again.
  const secret2 = `v2-${crypto.randomUUID()}`;
  const again = await svc(cp, ["tool-servers", "secrets", "github", "--secrets", "--workspace", "default"], { stdin: `X-Api-Key=${secret2}\nX-Tenant=acme\n` });
  expect(again.code).toBe(0);
  expect(again.stdout).toContain("has new secrets");
  const after = (await api(cp, "GET", "/runtime/policy-bundle?version=2", undefined, rt.token)).json.tool_servers.find((x: { name: string }) => x.name === "github");
  expect(JSON.parse(await d.decrypt(Buffer.from(after.secrets_sealed, "base64"), "text"))).toEqual({ "X-Api-Key": secret2, "X-Tenant": "acme" });
  const bad = await svc(cp, ["tool-servers", "secrets", "github", "--secrets", "--workspace", "default"], { stdin: `no-equals-sign-${secret2}\n` });
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain("stdin line 1 is not NAME=value");
  expect(bad.stderr).not.toContain(secret2);
});

test("readiness follows the runtime's heartbeat: unreachable → exit 1 naming it; reachable → exit 0", async () => {
  const agent = await createAgent(cp);
  const inst = await createInstallation(cp, agent);
  const rt = await bootstrapRuntime(cp, inst.id);
  expect((await svc(cp, ["tool-servers", "create", "notes", "--url", "https://notes.example.com/mcp", "--agent", agent, "--workspace", "default"])).code).toBe(0);
  const beat = async (state: string, error: string | null, count: number) =>
    api(
      cp,
      "POST",
      "/runtime/heartbeat",
      {
        replica_id: rt.replica,
        state: "ready",
        policy_revision: 1,
        tool_count: count,
        version: "t",
        spool_depth: 0,
        last_success: null,
        tool_servers: [{ name: "notes", state, error, tool_count: count }],
      },
      rt.token,
    );

  let r = await svc(cp, ["tool-servers", "readiness", "notes", "--workspace", "default"]);
  expect(r.code).toBe(1);
  expect(r.stdout).toContain(`not reported yet by ${rt.replica}`);
  expect(r.stderr.trim()).toMatch(/^svc tool-servers readiness: tool server notes is not ready \(failed: runtimes_reach_server\).*\(not_ready\)$/);

  expect((await beat("unreachable", "connect ECONNREFUSED 10.0.0.9:443", 0)).status).toBe(204);
  r = await svc(cp, ["tool-servers", "readiness", "notes", "--workspace", "default"]);
  expect(r.code).toBe(1);
  expect(r.stdout).toContain("connect ECONNREFUSED 10.0.0.9:443");
  expect(r.stdout).toMatch(new RegExp(`${rt.replica}\\s+${inst.id}\\s+unreachable`));

  expect((await beat("ok", null, 3)).status).toBe(204);
  r = await svc(cp, ["tool-servers", "readiness", "notes", "--workspace", "default", "--json"]);
  expect(r.code).toBe(0);
  const j = JSON.parse(r.stdout);
  expect(j.ready).toBe(true);
  expect(j.runtimes).toEqual([{ replica_id: rt.replica, installation_id: inst.id, state: "ok", error: null, tool_count: 3, last_heartbeat_at: expect.any(String) }]);
  const shown = await svc(cp, ["tool-servers", "show", "notes", "--workspace", "default", "--json"]);
  expect(JSON.parse(shown.stdout).runtimes[0]).toMatchObject({ state: "ok", tool_count: 3 });
});

test("tools replaces the allow-list and overrides; assign, unassign; delete refused while assigned, then done", async () => {
  const agent = await createAgent(cp);
  expect((await svc(cp, ["tool-servers", "create", "wiki", "--url", "https://wiki.example.com/mcp", "--workspace", "default"])).code).toBe(0);
  let r = await svc(cp, ["tool-servers", "tools", "wiki", "--workspace", "default", "--allow", "search,edit", "--access", "search=read", "--json"]);
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({ allowed_tools: ["edit", "search"], access_overrides: { search: "read" } });
  r = await svc(cp, ["tool-servers", "tools", "wiki", "--workspace", "default", "--allow", "*", "--access", "-", "--json"]);
  expect(JSON.parse(r.stdout)).toMatchObject({ allowed_tools: null, access_overrides: {} });

  r = await svc(cp, ["tool-servers", "assign", "wiki", "--workspace", "default", "--agent", agent]);
  expect(r.code).toBe(0);
  expect(r.stdout).toMatch(/^Assigned tool server ts_\w+ \(wiki\) to agent agt_\w+\.\n$/);
  const ghost = await svc(cp, ["tool-servers", "assign", "wiki", "--workspace", "default", "--agent", "agt_00000000000000000000000000"]);
  expect(ghost.code).toBe(1);
  expect(ghost.stderr).toContain("(agent_not_found)");

  const refused = await svc(cp, ["tool-servers", "delete", "wiki", "--workspace", "default"]);
  expect(refused.code).toBe(1);
  expect(refused.stderr).toContain(`assigned to ${agent}; unassign it first`);
  expect(await names()).toContain("wiki");

  expect((await svc(cp, ["tool-servers", "unassign", "wiki", "--workspace", "default", "--agent", agent])).code).toBe(0);
  const del = await svc(cp, ["tool-servers", "delete", "wiki", "--workspace", "default"]);
  expect(del.code).toBe(0);
  expect(del.stdout).toMatch(/^Deleted tool server ts_\w+ \(wiki\)\.\n$/);
  expect(await names()).not.toContain("wiki");
  const gone = await svc(cp, ["tool-servers", "show", "wiki", "--workspace", "default"]);
  expect(gone.code).toBe(1);
  expect(gone.stderr).toContain("(not_found)");
});

test("update changes the url, the allow-list and the overrides, and seals new secrets; the others stay; the bundle follows", async () => {
  const agent = await createAgent(cp);
  const inst = await createInstallation(cp, agent);
  const rt = await bootstrapRuntime(cp, inst.id);
  const created = JSON.parse(
    (await svc(cp, ["tool-servers", "create", "crm", "--url", "https://crm.example.com/mcp", "--allow", "lookup,update", "--agent", agent, "--workspace", "default", "--json"])).stdout,
  );
  let r = await svc(cp, ["tool-servers", "update", "crm", "--workspace", "default", "--url", "https://crm2.example.com/v2/mcp/", "--access", "lookup=read", "--json"]);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({
    id: created.id,
    name: "crm",
    transport: "http",
    url: "https://crm2.example.com/v2/mcp",
    allowed_tools: ["lookup", "update"],
    access_overrides: { lookup: "read" },
    has_secrets: false,
    assigned_agents: [agent],
  });

  const token = `crm_${crypto.randomUUID()}`;
  r = await svc(cp, ["tool-servers", "update", "crm", "--workspace", "default", "--bearer", "--allow", "*"], { stdin: `${token}\n` });
  expect(r.code).toBe(0);
  expect(r.stdout).toStartWith(`Updated tool server ${created.id} (crm); runtimes use it from their next bundle.\n`);
  expect(r.stdout).toContain("url:              https://crm2.example.com/v2/mcp\n");
  expect(r.stdout).toContain("tools served:     all it lists\n");
  expect(r.stdout).toContain("lookup=read"); // the overrides stay
  expect(r.stderr).toContain("Sealed 1 secret(s) (Authorization)");
  expect(r.stdout + r.stderr).not.toContain(token);
  const entry = (await api(cp, "GET", "/runtime/policy-bundle?version=2", undefined, rt.token)).json.tool_servers.find((x: { name: string }) => x.name === "crm");
  expect(entry).toMatchObject({ url: "https://crm2.example.com/v2/mcp", allowed_tools: null, access_overrides: { lookup: "read" } });
  const d = new Decrypter();
  d.addIdentity(rt.identity);
  expect(JSON.parse(await d.decrypt(Buffer.from(entry.secrets_sealed, "base64"), "text"))).toEqual({ Authorization: `Bearer ${token}` });
  expect(filesHolding(cp.dataDir, token)).toEqual([]);
});

test("update of a stdio server takes --command and --args; flags of the other transport and nothing to change are usage errors before stdin is read", async () => {
  expect((await svc(cp, ["tool-servers", "create", "clock", "--command", "mcp-server-time", "--args=--local-timezone,UTC", "--workspace", "default"])).code).toBe(0);
  const r = await svc(cp, ["tool-servers", "update", "clock", "--workspace", "default", "--args", '["--local-timezone","Europe/Berlin"]', "--json"]);
  expect(r.code).toBe(0);
  expect(JSON.parse(r.stdout)).toMatchObject({ command: "mcp-server-time", args: ["--local-timezone", "Europe/Berlin"] });
  const secret = `never-${crypto.randomUUID()}`;
  for (const [flags, words] of [
    [["--url", "https://clock.example.com/mcp"], 'tool server "clock" is a stdio server: change it with --command or --args, not --url'],
    [["--bearer"], "--bearer is for http servers"],
    [[], "nothing to change: pass --url (http), --command or --args (stdio)"],
    [["--url", "http://clock.example.com/mcp"], "(endpoint_not_https)"],
    // the allow-list and overrides given together are checked together, as by create
    [["--allow", "a", "--access", "b=write"], "--access names tools outside --allow: b"],
  ] as [string[], string][]) {
    const bad = await svc(cp, ["tool-servers", "update", "clock", "--workspace", "default", ...flags], { stdin: `${secret}\n` });
    expect(bad.code).toBe(2);
    expect(bad.stdout).toBe("");
    expect(bad.stderr).toStartWith("svc tool-servers update: ");
    expect(bad.stderr).toContain(words);
    expect(bad.stderr).not.toContain(secret);
  }
  const after = JSON.parse((await svc(cp, ["tool-servers", "show", "clock", "--workspace", "default", "--json"])).stdout);
  expect(after).toMatchObject({ args: ["--local-timezone", "Europe/Berlin"], allowed_tools: null, access_overrides: {} });
});

test("PATCH /tool-servers/:id refuses a bad field with 4xx naming it, and changes nothing", async () => {
  const s = (await api(cp, "POST", org(cp, "/tool-servers"), { name: "patchme", workspace: "default", transport: "http", url: "https://p.example.com/mcp" })).json;
  const patch = async (body: unknown) => api(cp, "PATCH", org(cp, `/tool-servers/${s.id}`), body);
  const cases: [unknown, number, string, string][] = [
    [{ url: "http://p.example.com/mcp" }, 422, "/url", "https"],
    [{ name: "renamed" }, 422, "/name", "name cannot change"],
    [{ transport: "stdio" }, 422, "/transport", "transport cannot change"],
    [{ command: "mcp-server-time" }, 422, "/command", "is an http server"],
    [{ headers: { Authorization: "Bearer plain" } }, 422, "/headers", "never receives plaintext secrets"],
    [{ allowed_tools: ["a"], access_overrides: { b: "write" } }, 422, "/access_overrides", "outside allowed_tools"],
    [{ allowed_tools: ["bad\u0007name"] }, 422, "/allowed_tools/0", "no control characters"],
    [{ secret_names: ["X"] }, 422, "/secrets_sealed", "come with secrets_sealed"],
    [{}, 422, "/", "nothing to change"],
  ];
  for (const [body, status, path, words] of cases) {
    const res = await patch(body);
    expect([res.status, JSON.stringify(body)]).toEqual([status, JSON.stringify(body)]);
    expect(res.json.detail).toContain(words);
    expect(res.json.errors).toEqual([expect.objectContaining({ path })]);
  }
  const schema = await patch({ access_overrides: { lookup: "admin" } });
  expect(schema.status).toBeGreaterThanOrEqual(400);
  expect(schema.status).toBeLessThan(500);
  expect(schema.json.code).toBe("validation_failed");
  expect(JSON.stringify(schema.json)).toContain("access_overrides");
  const unknown = await api(cp, "PATCH", org(cp, "/tool-servers/nope"), { url: "https://x.example.com/mcp" });
  expect(unknown.status).toBe(404);
  expect((await api(cp, "GET", org(cp, `/tool-servers/${s.id}`))).json).toMatchObject({ name: "patchme", url: "https://p.example.com/mcp", allowed_tools: null, access_overrides: {} });
  const ok = await patch({ url: "https://p2.example.com/mcp" });
  expect(ok.status).toBe(200);
  expect(ok.json).toMatchObject({ url: "https://p2.example.com/mcp", assigned_agents: [] });
});
