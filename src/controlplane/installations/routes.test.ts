import { describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { agentAndInstallation, fakeReplica, revisionOf } from "../auth/test-fixtures.ts";
import { hashSecret } from "../auth/tokens.ts";
import { tables } from "../db/index.ts";
import { testControlPlane } from "../testing.ts";
import { toolsOfInstallation } from "../tools/lookup.ts";
import { findInstallationByToken } from "./runtime-auth.ts";

async function setup() {
  const cp = await testControlPlane();
  const agent = (await cp.call("POST", cp.org("/agents"), { body: { name: "helpdesk", workspace: "default" } })).json;
  return { cp, agent };
}

describe("POST /installations", () => {
  test("creates a chatui installation bound to an agent of the workspace", async () => {
    const { cp, agent } = await setup();
    const res = await cp.call("POST", cp.org("/installations"), { body: { platform: "chatui", name: "helpdesk-bot", agent_id: agent.id, workspace: "default" } });
    expect(res.status).toBe(201);
    expect(structuredClone(res.json)).toMatchObject({
      id: expect.stringMatching(/^inst_/),
      name: "helpdesk-bot",
      platform: "chatui",
      agent_id: agent.id,
      workspace_id: cp.workspaceId,
      has_credential: false,
      credential_issued_at: null,
      tool_count: 0,
    });
    const list = await cp.call("GET", cp.org("/installations?workspace=default"));
    expect(list.json.installations.map((i: { id: string }) => i.id)).toEqual([res.json.id]);
  });

  test.each(["slack", "ChatUI", "chatui ", ""])("platform %p is refused with invalid_platform naming the rule", async (platform) => {
    const { cp, agent } = await setup();
    const res = await cp.call("POST", cp.org("/installations"), { body: { platform, name: "x", agent_id: agent.id, workspace: "default" } });
    expect(res.status).toBe(422);
    expect(res.json.code).toBe("invalid_platform");
    expect(res.json.detail).toContain('must be exactly "chatui"');
  });

  test("the agent must exist and be in the same workspace", async () => {
    const { cp, agent } = await setup();
    await cp.call("POST", cp.org("/workspaces"), { body: { name: "other" } });
    const wrongWs = await cp.call("POST", cp.org("/installations"), { body: { platform: "chatui", name: "x", agent_id: agent.id, workspace: "other" } });
    expect(wrongWs.status).toBe(422);
    expect(wrongWs.json.detail).toContain('not to workspace "other"');
    const unknown = await cp.call("POST", cp.org("/installations"), { body: { platform: "chatui", name: "x", agent_id: "agt_nope", workspace: "default" } });
    expect(unknown.status).toBe(404);
    expect(unknown.json.code).toBe("agent_not_found");
    const noWs = await cp.call("POST", cp.org("/installations"), { body: { platform: "chatui", name: "x", agent_id: agent.id, workspace: "nope" } });
    expect(noWs.json.code).toBe("workspace_not_found");
  });
});

describe("installation status, agents and tools", () => {
  test("status carries replicas and tool_count; tools and the bound agent are listed", async () => {
    const cp = await testControlPlane();
    const { agentId, installationId } = await agentAndInstallation(cp);
    const replica = await fakeReplica(cp, installationId);
    const { token } = (await cp.call("POST", cp.org(`/installations/${installationId}/credential`), { body: {} })).json;
    const tools = [
      { name: "crm.lookup", access: "read", required_capabilities: [] },
      { name: "crm.update", access: "write", required_capabilities: ["crm"] },
    ];
    expect((await cp.call("PUT", "/api/v1/runtime/tools", { token, body: { tools } })).status).toBe(200);
    const status = await cp.call("GET", cp.org(`/installations/${installationId}`));
    expect(status.status).toBe(200);
    expect(status.json.tool_count).toBe(2);
    expect(status.json.replicas).toEqual([
      expect.objectContaining({ id: replica.id, state: "ready", policy_revision: 3, tool_count: 2, spool_depth: 0, version: "0.1.30", last_heartbeat_at: null, last_success: null }),
    ]);
    expect((await cp.call("GET", cp.org(`/installations/${installationId}/tools`))).json.tools).toEqual(tools);
    const agents = await cp.call("GET", cp.org(`/installations/${installationId}/agents`));
    expect(agents.json.agents.map((a: { id: string }) => a.id)).toEqual([agentId]);
    expect((await cp.call("GET", cp.org("/installations/inst_nope"))).status).toBe(404);
  });
});

describe("runtime credential", () => {
  test("shown once, 409 without rotate, rotation makes the old token fail at once", async () => {
    const cp = await testControlPlane();
    const { installationId } = await agentAndInstallation(cp);
    const first = await cp.call("POST", cp.org(`/installations/${installationId}/credential`));
    expect(first.status).toBe(200);
    expect(first.headers.get("cache-control")).toBe("no-store");
    const token1: string = first.json.token;
    expect(token1).toMatch(/^svc_rt_/);
    const row = (
      await cp.deps.db
        .select()
        .from(tables(cp.deps.db).installations)
        .where(eq(tables(cp.deps.db).installations.id, installationId))
    )[0]!;
    expect(row.tokenHash).toBe(hashSecret(token1));
    expect((await findInstallationByToken(cp.deps, token1, {}))?.installationId).toBe(installationId);
    // Status never shows the token, only that one exists.
    const status = await cp.call("GET", cp.org(`/installations/${installationId}`));
    expect(status.json.has_credential).toBe(true);
    expect(status.text).not.toContain(token1);

    const again = await cp.call("POST", cp.org(`/installations/${installationId}/credential`), { body: {} });
    expect(again.status).toBe(409);
    expect(again.json.code).toBe("credential_already_issued");
    expect(await findInstallationByToken(cp.deps, token1, {})).not.toBeNull();

    const rotated = await cp.call("POST", cp.org(`/installations/${installationId}/credential`), { body: { rotate: true } });
    expect(rotated.status).toBe(200);
    const token2: string = rotated.json.token;
    expect(token2).not.toBe(token1);
    expect(await findInstallationByToken(cp.deps, token1, {})).toBeNull();
    expect((await findInstallationByToken(cp.deps, token2, {}))?.installationId).toBe(installationId);
  });

  test("DELETE makes the token fail, hides the installation, frees its tools and bumps the revision", async () => {
    const cp = await testControlPlane();
    const { installationId } = await agentAndInstallation(cp);
    const { token } = (await cp.call("POST", cp.org(`/installations/${installationId}/credential`), { body: {} })).json;
    expect((await cp.call("PUT", "/api/v1/runtime/tools", { token, body: { tools: [{ name: "crm.lookup", access: "read" }] } })).status).toBe(200);
    const before = await revisionOf(cp);
    const del = await cp.call("DELETE", cp.org(`/installations/${installationId}`));
    expect(del.status).toBe(204);
    expect(await findInstallationByToken(cp.deps, token, {})).toBeNull();
    expect(await revisionOf(cp)).toBeGreaterThan(before);
    const row = (
      await cp.deps.db
        .select()
        .from(tables(cp.deps.db).installations)
        .where(eq(tables(cp.deps.db).installations.id, installationId))
    )[0]!;
    expect(row.deletedAt).not.toBeNull();
    expect(await toolsOfInstallation(cp.deps.db, installationId)).toEqual([]);
    expect((await cp.call("GET", cp.org(`/installations/${installationId}`))).status).toBe(404);
    expect((await cp.call("GET", cp.org("/installations"))).json.installations).toEqual([]);
    expect((await cp.call("POST", cp.org(`/installations/${installationId}/credential`), { body: { rotate: true } })).status).toBe(404);
    expect((await cp.call("DELETE", cp.org(`/installations/${installationId}`))).status).toBe(404);
  });

  test("the deleted installation's runtime token is told so (installation_deleted, naming it), not to rotate a token that cannot come back", async () => {
    const cp = await testControlPlane();
    const { installationId } = await agentAndInstallation(cp, "default", "helpdesk");
    const { token } = (await cp.call("POST", cp.org(`/installations/${installationId}/credential`), { body: {} })).json;
    expect((await cp.call("DELETE", cp.org(`/installations/${installationId}`))).status).toBe(204);
    for (const [method, path] of [
      ["POST", "/api/v1/runtime/bootstrap"],
      ["GET", "/api/v1/runtime/policy-bundle?version=1"],
      ["PUT", "/api/v1/runtime/tools"],
    ] as const) {
      const res = await cp.call(method, path, { token, body: method === "GET" ? undefined : {} });
      expect(res.status).toBe(401);
      expect(res.json.code).toBe("installation_deleted");
      expect(res.json.detail).toContain(`installation ${installationId} (helpdesk-bot), which was deleted at `);
      expect(res.json.detail).toContain("svc bot init");
      expect(res.json.detail).not.toContain("--rotate");
    }
    // a token that never was one still hears the old message
    const wrong = await cp.call("POST", "/api/v1/runtime/bootstrap", { token: "svc_rt_" + "x".repeat(43), body: {} });
    expect(wrong.status).toBe(401);
    expect(wrong.json.code).toBe("unauthorized");
    expect(wrong.json.detail).toContain("wrong or was rotated");
  });
});
