import { describe, expect, test } from "bun:test";
import { testControlPlane } from "../testing.ts";

describe("agents", () => {
  test("create, show and list by workspace id or name", async () => {
    const cp = await testControlPlane();
    const ws2 = (await cp.call("POST", cp.org("/workspaces"), { body: { name: "support" } })).json;
    const a = await cp.call("POST", cp.org("/agents"), { body: { name: "helpdesk", workspace: "default", description: "front line" } });
    expect(a.status).toBe(201);
    expect(a.json).toEqual({ id: expect.stringMatching(/^agt_/), name: "helpdesk", description: "front line", workspace_id: cp.workspaceId, created_at: expect.any(String) });
    const b = await cp.call("POST", cp.org("/agents"), { body: { name: "triage", workspace: ws2.id } });
    expect(b.json.description).toBeNull();
    expect(b.json.workspace_id).toBe(ws2.id);

    expect((await cp.call("GET", cp.org(`/agents/${a.json.id}`))).json).toEqual(a.json);
    expect((await cp.call("GET", cp.org("/agents"))).json.agents.map((x: { id: string }) => x.id)).toEqual([a.json.id, b.json.id]);
    expect((await cp.call("GET", cp.org("/agents?workspace=support"))).json.agents.map((x: { id: string }) => x.id)).toEqual([b.json.id]);
    expect((await cp.call("GET", cp.org(`/agents?workspace=${cp.workspaceId}`))).json.agents.map((x: { id: string }) => x.id)).toEqual([a.json.id]);
  });

  test("refusals: unknown agent, unknown workspace, duplicate name, missing name", async () => {
    const cp = await testControlPlane();
    const missing = await cp.call("GET", cp.org("/agents/agt_nope"));
    expect(missing.status).toBe(404);
    expect(missing.json.code).toBe("agent_not_found");
    const ws = await cp.call("POST", cp.org("/agents"), { body: { name: "x", workspace: "nowhere" } });
    expect(ws.status).toBe(404);
    expect(ws.json.code).toBe("workspace_not_found");
    expect((await cp.call("GET", cp.org("/agents?workspace=nowhere"))).json.code).toBe("workspace_not_found");
    await cp.call("POST", cp.org("/agents"), { body: { name: "x", workspace: "default" } });
    expect((await cp.call("POST", cp.org("/agents"), { body: { name: "x", workspace: "default" } })).status).toBe(409);
    const noName = await cp.call("POST", cp.org("/agents"), { body: { workspace: "default" } });
    expect(noName.status).toBe(422);
    expect(noName.json.code).toBe("validation_failed");
    expect((await cp.call("POST", cp.org("/agents"), { body: { name: "   ", workspace: "default" } })).status).toBe(422);
  });
});
