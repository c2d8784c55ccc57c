// The Graph client of directory sync on its own, against the HTTPS Graph double: the
// snapshot it builds, token refresh, throttling limits, and where it sends the token.
import { afterAll, expect, test } from "bun:test";
import { GraphClient, type GraphClientOptions } from "../../src/controlplane/directory-sync/graph.ts";
import { GraphDouble } from "../support/graph-double.ts";

const graph = new GraphDouble();
afterAll(() => graph.stop());

function client(over: Partial<GraphClientOptions> = {}) {
  return new GraphClient({
    tenantId: graph.tenantId,
    clientId: graph.clientId,
    clientSecret: graph.clientSecret,
    appId: graph.appId,
    authorityUrl: graph.url,
    graphUrl: graph.url,
    extraCa: graph.tls.ca,
    ...over,
  });
}

const role = graph.addRole("chat-users");
const alice = graph.addUser("Alice");
const bob = graph.addUser("Bob", { mail: null });
const team = graph.addGroup("Team", [bob.id]);
graph.assign(role.id, alice);
graph.assign(role.id, team);

test("the snapshot has the roles, assignments, group members and user details", async () => {
  const s = await client().snapshot();
  expect(s.appRoles).toEqual([{ id: role.id, value: "chat-users", displayName: "chat-users", isEnabled: true }]);
  expect(s.assignments.map((a) => a.principalType).sort()).toEqual(["Group", "User"]);
  expect(s.groupMembers).toEqual({ [team.id]: [bob.id] });
  expect(s.users[alice.id]).toEqual({ id: alice.id, displayName: "Alice", mail: "alice@example.com", userPrincipalName: "alice@contoso.onmicrosoft.com", accountEnabled: true });
  expect(s.users[bob.id]?.mail).toBeNull();
  // The user look-up asked only for the fields it needs.
  const lookup = graph.requests.find((r) => r.path === `/v1.0/users/${alice.id}`)!;
  expect(decodeURIComponent(lookup.query)).toBe("?$select=id,displayName,mail,userPrincipalName,accountEnabled");
});

test("without the extra CA the double's certificate is not trusted", async () => {
  await expect(client({ extraCa: undefined }).snapshot()).rejects.toThrow(/could not reach the token endpoint/);
});

test("a 401 from Graph refreshes the token once", async () => {
  const c = client();
  await c.signIn();
  graph.expireTokens();
  const before = graph.requests.length;
  const sp = await c.get<{ id: string }>(`/v1.0/servicePrincipals(appId='${graph.appId}')?$select=id`, "Application.Read.All");
  expect(sp?.id).toBe(graph.servicePrincipalId);
  expect(graph.requests.slice(before).map((r) => r.status)).toEqual([401, 200, 200]);
});

test("a Retry-After beyond the limit fails instead of stalling; endless throttling gives up", async () => {
  graph.throttle(1, 3600);
  await expect(client().snapshot()).rejects.toThrow(/asked to wait 3600 s/);
  graph.throttle(10, 0);
  await expect(client({ maxRetries: 2 }).snapshot()).rejects.toThrow(/kept throttling .* after 2 retries/);
  graph.throttle(0, 0);
});

test("a nextLink to another origin is refused: the token goes only to Graph", async () => {
  const c = client();
  await expect(c.get("https://evil.example/v1.0/users", "User.Read.All")).rejects.toThrow(/refusing to send the token there/);
});

test("an unknown client id and an unknown tenant are named", async () => {
  await expect(client({ clientId: "99999999-9999-4999-8999-999999999999" }).signIn()).rejects.toThrow(/does not know client id 99999999/);
  await expect(client({ tenantId: "contoso.example" }).signIn()).rejects.toThrow(/does not know tenant contoso.example/);
});
