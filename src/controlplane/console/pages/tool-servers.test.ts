// The Tool servers pages through the real app (in-process, signed in as the owner): the list
// with readiness, and one server with its assignment, its tool rules and each live runtime
// replica's report from its heartbeat. The sealed secrets never reach the page; a runtime's
// error text is escaped.
import { describe, expect, test } from "bun:test";
import { agentAndInstallation, fakeReplica, sealKey, signInSession } from "../../auth/test-fixtures.ts";
import { testControlPlane } from "../../testing.ts";

describe("Tool servers pages", () => {
  test("list and detail show the server, its readiness, its agent and what each replica reported", async () => {
    const cp = await testControlPlane();
    const { agentId, installationId } = await agentAndInstallation(cp, "default", "helpdesk");
    const token = (await cp.call("POST", cp.org(`/installations/${installationId}/credential`), { body: {} })).json.token as string;
    const up = await fakeReplica(cp, installationId);
    const down = await fakeReplica(cp, installationId);
    const sealed = await sealKey([up.recipient, down.recipient], '{"Authorization":"Bearer ghp_console"}');
    const gh = (
      await cp.call("POST", cp.org("/tool-servers"), {
        body: {
          name: "github",
          transport: "http",
          url: "https://mcp.example.com/mcp",
          workspace: "default",
          secrets_sealed: sealed,
          secret_names: ["Authorization"],
          sealed_to: [up.id, down.id],
          access_overrides: { create_issue: "write" },
        },
      })
    ).json;
    await cp.call("POST", cp.org("/tool-servers"), { body: { name: "time", transport: "stdio", command: "mcp-server-time", args: ["--local-timezone", "UTC"], workspace: "default" } });
    await cp.call("POST", cp.org(`/tool-servers/${gh.id}/assign`), { body: { agent_id: agentId } });
    const beat = async (replica: string, entry: unknown) =>
      cp.call("POST", "/api/v1/runtime/heartbeat", {
        token,
        body: { replica_id: replica, state: "ready", policy_revision: 1, tool_count: 1, version: "t", spool_depth: 0, last_success: null, tool_servers: [entry] },
      });
    expect((await beat(up.id, { name: "github", state: "ok", error: null, tool_count: 7 })).status).toBe(204);
    expect((await beat(down.id, { name: "github", state: "unreachable", error: "<script>alert(1)</script> TLS handshake failed", tool_count: 0 })).status).toBe(204);
    // What the runtimes listed (issue 31): one tool served, one outside the allow-list, one a runtime could not serve (its name is the server's, escaped on the page).
    expect((await cp.call("PUT", cp.org(`/tool-servers/${gh.id}/tools`), { body: { allowed_tools: ["list-issues", "create_issue"], access_overrides: { create_issue: "write" } } })).status).toBe(200);
    const listed = [
      { name: "github.list-issues", upstream: "list-issues", access: "read" },
      { name: "github.delete_repo", upstream: "delete_repo", access: "write" },
    ];
    const skipped = [{ tool: "<b>twice</b>", why: 'the server lists 2 tools named "<b>twice</b>"; svc serves neither' }];
    expect((await cp.call("PUT", "/api/v1/runtime/mcp-tools", { token, body: { servers: [{ server: "github", tools: listed, skipped }] } })).status).toBe(200);

    const { cookie } = await signInSession(cp);
    const get = async (path: string) => {
      const res = await cp.app.handle(new Request(`http://localhost${path}`, { headers: { cookie } }));
      return { status: res.status, text: await res.text() };
    };

    const listPage = await get("/tool-servers");
    expect(listPage.status).toBe(200);
    expect(listPage.text).toContain('href="/tool-servers"');
    expect(listPage.text).toContain(`href="/tool-servers/${gh.id}"`);
    expect(listPage.text).toContain("https://mcp.example.com/mcp");
    expect(listPage.text).toContain("mcp-server-time --local-timezone UTC");
    expect(listPage.text).toContain("not ready");
    expect(listPage.text).toContain("runtimes_reach_server");
    expect(listPage.text).not.toContain(sealed);
    expect(listPage.text).not.toContain("ghp_console");

    const detail = await get(`/tool-servers/${gh.id}`);
    expect(detail.status).toBe(200);
    expect(detail.text).toContain("tool:github.&lt;tool&gt;");
    expect(detail.text).toContain("helpdesk");
    expect(detail.text).toContain("create_issue");
    expect(detail.text).toContain("Authorization");
    expect(detail.text).toContain("sealed to 2");
    expect(detail.text).toMatch(/Identity assertion<\/dt><dd><span class="muted">none<\/span>/);
    // issue 32: a server asking for assertions shows its header and audience
    expect((await cp.call("PATCH", cp.org(`/tool-servers/${gh.id}`), { body: { assertion_header: "X-Svc-Identity", assertion_audience: "urn:gh" } })).status).toBe(200);
    const asking = await get(`/tool-servers/${gh.id}`);
    expect(asking.text).toContain("signed JWT in <code>X-Svc-Identity</code>, audience <code>urn:gh</code>");
    // One row per live replica, with its own report.
    expect(detail.text).toMatch(new RegExp(`${up.id}[^]*?reachable, 7 tool\\(s\\)`));
    expect(detail.text).toMatch(new RegExp(`${down.id}[^]*?unreachable: serves no tools[^]*?TLS handshake failed`));
    expect(detail.text).not.toContain("<script>alert(1)</script>");
    expect(detail.text).toContain("&lt;script&gt;");
    expect(detail.text).not.toContain(sealed);
    expect(detail.text).not.toContain("ghp_console");
    // The tools, served or why not.
    expect(detail.text).toMatch(/<code>github\.list-issues<\/code>[^]*?<code>list-issues<\/code>[^]*?>served</);
    expect(detail.text).toMatch(/<code>github\.delete_repo<\/code>[^]*?>not served<[^]*?not in allowed_tools/);
    expect(detail.text).toMatch(/<code>&lt;b&gt;twice&lt;\/b&gt;<\/code>[^]*?>not served<[^]*?svc serves neither/);
    expect(detail.text).not.toContain("<b>twice</b>");

    // The installation's page shows each replica's report too.
    const inst = await get(`/installations/${installationId}`);
    expect(inst.status).toBe(200);
    expect(inst.text).toContain("MCP servers");
    expect(inst.text).toMatch(new RegExp(`${up.id}[^]*?<code>github</code> [^]*?reachable, 7 tool\\(s\\)`));
    expect(inst.text).toMatch(new RegExp(`${down.id}[^]*?<code>github</code> [^]*?unreachable: serves no tools[^]*?&lt;script&gt;alert\\(1\\)&lt;/script&gt; TLS handshake failed`));
    expect(inst.text).not.toContain("<script>alert(1)</script>");

    const missing = await get("/tool-servers/ts_01J00000000000000000000000");
    expect(missing.status).toBe(404);
    expect(missing.text).toContain("All tool servers");
  });

  test("an empty organization shows the empty state and how to create one", async () => {
    const cp = await testControlPlane();
    const { cookie } = await signInSession(cp);
    const res = await cp.app.handle(new Request("http://localhost/tool-servers", { headers: { cookie } }));
    const text = await res.text();
    expect(res.status).toBe(200);
    expect(text).toContain("No tool servers yet.");
    expect(text).toContain("svc tool-servers create");
  });
});
