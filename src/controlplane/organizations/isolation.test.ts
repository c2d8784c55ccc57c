// One organization's token never reaches another's data: 404 on its paths, and none of its
// objects by id from inside its own organization either.
import { expect, test } from "bun:test";
import { agentAndInstallation, secondOrganization } from "../auth/test-fixtures.ts";
import { testControlPlane } from "../testing.ts";

test("a second organization sees nothing of the first", async () => {
  const cp = await testControlPlane();
  const { agentId, installationId } = await agentAndInstallation(cp);
  const user = (await cp.call("POST", cp.org("/users"), { body: { email: "alice@acme.test" } })).json;
  const group = (await cp.call("POST", cp.org("/groups"), { body: { name: "acme-staff" } })).json;
  const policy = (await cp.call("POST", cp.org("/policies"), { body: { name: "p", src: "*", dst: "model:invoke", effect: "permit", workspace: "default" } })).json;
  const profile = (
    await cp.call("POST", cp.org("/model-profiles"), { body: { display_name: "acme-llm", endpoint: "https://llm.acme.test/v1", auth_type: "none", default_model: "m", workspace: "default" } })
  ).json;
  await cp.call("POST", cp.org(`/users/${user.id}/remote-identities`), { body: { platform: "chatui", remote_user_id: "fe-1" } });

  const other = await secondOrganization(cp);

  // The first organization's paths: 404, whatever the route.
  for (const [method, path] of [
    ["GET", "/workspaces"],
    ["GET", "/members"],
    ["GET", "/agents"],
    ["GET", `/agents/${agentId}`],
    ["GET", `/installations/${installationId}`],
    ["POST", `/installations/${installationId}/credential`],
    ["DELETE", `/installations/${installationId}`],
    ["GET", "/model-profiles"],
    ["GET", `/model-profiles/${profile.id}/readiness`],
    ["GET", "/policies"],
    ["DELETE", `/policies/${policy.id}`],
    ["GET", "/users"],
    ["GET", "/groups"],
    ["GET", "/remote-identities"],
    ["POST", "/api-tokens"],
  ] as const) {
    const res = await cp.call(method, cp.org(path), { token: other.token, ...(method === "POST" ? { body: { name: "x" } } : {}) });
    expect([method, path, res.status]).toEqual([method, path, 404]);
  }

  // Inside its own organization, the first organization's ids do not resolve.
  expect((await cp.call("GET", other.org(`/agents/${agentId}`), { token: other.token })).status).toBe(404);
  expect((await cp.call("GET", other.org(`/installations/${installationId}`), { token: other.token })).status).toBe(404);
  expect((await cp.call("POST", other.org(`/installations/${installationId}/credential`), { token: other.token, body: {} })).status).toBe(404);
  expect((await cp.call("GET", other.org(`/model-profiles/${profile.id}`), { token: other.token })).status).toBe(404);
  expect((await cp.call("DELETE", other.org(`/policies/${policy.id}`), { token: other.token })).status).toBe(404);
  expect((await cp.call("GET", other.org(`/users/${user.id}`), { token: other.token })).status).toBe(404);
  expect((await cp.call("GET", other.org("/users/alice@acme.test"), { token: other.token })).status).toBe(404);
  expect((await cp.call("POST", other.org(`/groups/${group.id}/members`), { token: other.token, body: { user_id: user.id } })).status).toBe(404);
  const crossAgent = await cp.call("POST", other.org("/installations"), { token: other.token, body: { platform: "chatui", name: "x", agent_id: agentId, workspace: "default" } });
  expect(crossAgent.status).toBe(404);
  expect(crossAgent.json.code).toBe("agent_not_found");
  const crossWs = await cp.call("GET", other.org(`/agents?workspace=${cp.workspaceId}`), { token: other.token });
  expect(crossWs.json.code).toBe("workspace_not_found");
  const crossPolicy = await cp.call("POST", other.org("/policies"), {
    token: other.token,
    body: { name: "p", src: "*", dst: "model:invoke", effect: "permit", workspace: "default", agent_id: agentId },
  });
  expect(crossPolicy.status).toBe(404);

  // Its own listings hold none of the first organization's objects.
  const lists = await Promise.all(
    ["/agents", "/installations", "/model-profiles", "/policies", "/users", "/groups", "/remote-identities", "/workspaces", "/members"].map(async (p) =>
      cp.call("GET", other.org(p), { token: other.token }),
    ),
  );
  const text = lists.map((l) => l.text).join("\n");
  for (const id of [agentId, installationId, user.id, group.id, policy.id, profile.id, cp.workspaceId, cp.accountId, "alice@acme.test", "fe-1"]) expect(text).not.toContain(id);
  expect((await cp.call("GET", other.org("/workspaces"), { token: other.token })).json.workspaces).toHaveLength(1);
});
