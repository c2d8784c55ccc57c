// Provenance of memberships (issue 27): every grant through the members route is one row written
// with the change, naming who and when; rows outlive the membership; a removed and re-added
// member starts a new membership; grantPath follows grants up through other accounts and other
// organizations, never through a lowering. On SQLite (and PostgreSQL with SVC_TEST_POSTGRES_URL).
import { expect, test } from "bun:test";
import { actingAsSystem } from "../audit/admin-events.ts";
import { issueApiToken } from "./api-tokens.ts";
import { secondOrganization } from "./test-fixtures.ts";
import { grantPath, grantsOf, memberSince, roleChangeKind } from "./membership-grants.ts";
import { testControlPlane } from "../testing.ts";

test("roleChangeKind (pure)", () => {
  expect(roleChangeKind("member", "admin")).toBe("raised");
  expect(roleChangeKind("admin", "owner")).toBe("raised");
  expect(roleChangeKind("owner", "member")).toBe("lowered");
  expect(roleChangeKind("admin", "admin")).toBeNull();
});

test("each change through the members route is one grant with who and when; removal keeps them; re-adding starts a new membership", async () => {
  let now = 1_800_000_000_000;
  const cp = await testControlPlane({ now: () => now++ });
  const add = async (body: Record<string, unknown>) => (await cp.call("POST", cp.org("/members"), { body })).json.account_id as string;
  const ada = await add({ email: "ada@example.com", role: "member", password: "a long enough password" });
  const bo = await add({ email: "bo@example.com", role: "admin" });
  await add({ email: "ada@example.com", role: "admin" });
  await add({ email: "ada@example.com", role: "admin" }); // unchanged: nothing to record
  await add({ email: "ada@example.com", role: "member" });
  const first = await memberSince(cp.deps.db, ada, cp.orgId);
  expect((await grantsOf(cp.deps.db, ada, cp.orgId)).map((g) => [g.kind, g.role, g.previousRole, g.byAccountId])).toEqual([
    ["created", "member", null, cp.accountId],
    ["raised", "admin", "member", cp.accountId],
    ["lowered", "member", "admin", cp.accountId],
  ]);
  expect((await grantsOf(cp.deps.db, bo, cp.orgId)).map((g) => g.kind)).toEqual(["invited"]);
  expect((await grantsOf(cp.deps.db, cp.accountId, cp.orgId)).map((g) => [g.kind, g.byAccountId])).toEqual([["bootstrap", null]]);

  now += 3_600_000;
  expect((await cp.call("DELETE", cp.org(`/members/${ada}`))).status).toBe(204);
  expect(await memberSince(cp.deps.db, ada, cp.orgId)).toBeNull();
  expect(await grantsOf(cp.deps.db, ada, cp.orgId)).toHaveLength(3);
  await add({ email: "ada@example.com", role: "admin" });
  expect((await grantsOf(cp.deps.db, ada, cp.orgId)).map((g) => g.kind)).toEqual(["created", "raised", "lowered", "added"]);
  expect(await memberSince(cp.deps.db, ada, cp.orgId)).toBeGreaterThan(first! + 3_600_000);
});

test("grantPath: through accounts the ancestor granted, across organizations; a lowering is no grant", async () => {
  const cp = await testControlPlane();
  const globex = await secondOrganization(cp);
  const add = async (org: (p: string) => string, token: string, email: string, role: string) => (await cp.call("POST", org("/members"), { token, body: { email, role } })).json.account_id as string;
  const globexOwner = (await cp.call("GET", "/api/v1/me", { token: globex.token })).json.account.id as string;
  // Globex's owner invites x; Acme's owner adds x to Acme; x, an admin there, invites y.
  const x = await add(globex.org, globex.token, "x@example.com", "admin");
  await add(cp.org, cp.adminToken, "x@example.com", "admin");
  const xToken = (await issueApiToken(cp.deps, { accountId: x, orgId: cp.orgId, name: "x", signIn: { at: null } }, actingAsSystem(cp.deps, "controlplane"))).token;
  const y = await add(cp.org, xToken, "y@example.com", "admin");
  expect((await grantPath(cp.deps.db, y, globexOwner))!.map((g) => [g.accountId, g.orgId, g.kind, g.byAccountId])).toEqual([
    [y, cp.orgId, "invited", x],
    [x, globex.orgId, "invited", globexOwner],
  ]);
  expect((await grantPath(cp.deps.db, y, cp.accountId))!.map((g) => [g.accountId, g.kind, g.byAccountId])).toEqual([
    [y, "invited", x],
    [x, "added", cp.accountId],
  ]);
  expect(await grantPath(cp.deps.db, y, "acc_NOBODY")).toBeNull();
  // x lowers w, whom Acme's owner invited: that grants w nothing.
  const w = await add(cp.org, cp.adminToken, "w@example.com", "admin");
  await add(cp.org, xToken, "w@example.com", "member");
  expect(await grantPath(cp.deps.db, w, x)).toBeNull();
  expect((await grantPath(cp.deps.db, w, cp.accountId))!.map((g) => g.kind)).toEqual(["invited"]);
});
