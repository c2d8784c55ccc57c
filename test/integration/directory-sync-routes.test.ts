// Directory sync through the admin routes of an in-process control plane, against the HTTPS
// Graph double: first sync, roles added and removed, a disabled account, dry runs, wrong
// secret, missing permission, paging, throttling, the report, and the scheduler.
import { afterAll, beforeEach, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { tables } from "../../src/controlplane/db/index.ts";
import { addGroupMember, ensureGroup, upsertUserByEmail } from "../../src/controlplane/directory/service.ts";
import { startDirectorySyncScheduler } from "../../src/controlplane/directory-sync/scheduler.ts";
import { type TestControlPlane, testControlPlane } from "../../src/controlplane/testing.ts";
import { type DoubleRole, type DoubleUser, GraphDouble } from "../support/graph-double.ts";

type Fixture = {
  cp: TestControlPlane;
  graph: GraphDouble;
  roles: { users: DoubleRole; admins: DoubleRole; retired: DoubleRole };
  people: Record<"alice" | "bob" | "carol" | "frank" | "dave" | "erin", DoubleUser>;
};

const doubles: GraphDouble[] = [];
afterAll(() => doubles.forEach((d) => d.stop()));

/**
 * alice: chat-users (direct, mail); bob: chat-admins (direct, no mail → UPN);
 * Sales group (carol, frank, and a nested group) → chat-users; dave: disabled account
 * assigned chat-users; erin: default access only; a disabled role "retired" assigned to erin.
 */
async function fixture(): Promise<Fixture> {
  const graph = new GraphDouble();
  doubles.push(graph);
  const cp = await testControlPlane();
  cp.deps.config.extraCaPem = graph.tls.ca;
  const users = graph.addRole("chat-users");
  const admins = graph.addRole("chat-admins");
  const retired = graph.addRole("retired", { isEnabled: false });
  const alice = graph.addUser("Alice");
  const bob = graph.addUser("Bob", { mail: null, userPrincipalName: "Bob.Builder@contoso.onmicrosoft.com" });
  const carol = graph.addUser("Carol");
  const frank = graph.addUser("Frank");
  const dave = graph.addUser("Dave", { accountEnabled: false });
  const erin = graph.addUser("Erin");
  const nested = graph.addGroup("Nested", [erin.id]);
  const sales = graph.addGroup("Sales", [carol.id, frank.id, nested.id]);
  graph.assign(users.id, alice);
  graph.assign(admins.id, bob);
  graph.assign(users.id, sales);
  graph.assign(users.id, dave);
  graph.assign("00000000-0000-0000-0000-000000000000", erin);
  graph.assign(retired.id, erin);
  return { cp, graph, roles: { users, admins, retired }, people: { alice, bob, carol, frank, dave, erin } };
}

function configBody(f: Fixture, over: Record<string, unknown> = {}) {
  return {
    tenant_id: f.graph.tenantId,
    client_id: f.graph.clientId,
    app_id: f.graph.appId,
    client_secret: f.graph.clientSecret,
    dry_run: false,
    create_users: true,
    authority_url: f.graph.url,
    graph_url: f.graph.url,
    ...over,
  };
}

async function configure(f: Fixture, over: Record<string, unknown> = {}) {
  const r = await f.cp.call("PUT", f.cp.org("/directory-sync"), { body: configBody(f, over) });
  expect(r.status).toBe(200);
  return r.json;
}

async function run(f: Fixture, body?: unknown) {
  const r = await f.cp.call("POST", f.cp.org("/directory-sync/run"), body === undefined ? {} : { body });
  expect(r.status).toBe(200);
  return r.json;
}

/** group name → sorted member emails, with the membership source. */
async function memberships(f: Fixture): Promise<Record<string, string[]>> {
  const db = f.cp.deps.db;

  const rows = await db
    .select({ group: tables(f.cp.deps.db).groups.name, email: tables(f.cp.deps.db).users.email, source: tables(f.cp.deps.db).groupMembers.source })
    .from(tables(f.cp.deps.db).groupMembers)
    .innerJoin(tables(f.cp.deps.db).groups, eq(tables(f.cp.deps.db).groups.id, tables(f.cp.deps.db).groupMembers.groupId))
    .innerJoin(tables(f.cp.deps.db).users, eq(tables(f.cp.deps.db).users.id, tables(f.cp.deps.db).groupMembers.userId));
  const out: Record<string, string[]> = {};
  for (const r of rows) (out[r.group] ??= []).push(r.source === "manual" ? `${r.email} (manual)` : r.email);
  for (const k of Object.keys(out)) out[k]!.sort();
  return out;
}

async function dbSnapshot(f: Fixture) {
  const db = f.cp.deps.db;

  return {
    users: await db.select().from(tables(f.cp.deps.db).users).orderBy(tables(f.cp.deps.db).users.id),
    groups: await db.select().from(tables(f.cp.deps.db).groups).orderBy(tables(f.cp.deps.db).groups.id),
    members: await db.select().from(tables(f.cp.deps.db).groupMembers).orderBy(tables(f.cp.deps.db).groupMembers.groupId, tables(f.cp.deps.db).groupMembers.userId),
    revision: await db
      .select({ r: tables(f.cp.deps.db).organizations.revision })
      .from(tables(f.cp.deps.db).organizations)
      .orderBy(tables(f.cp.deps.db).organizations.id),
  };
}

let f: Fixture;
beforeEach(async () => {
  f = await fixture();
});

describe("configuration", () => {
  test("report and run are 409 directory_sync_not_configured before set", async () => {
    for (const [method, path] of [
      ["GET", "/directory-sync/report"],
      ["POST", "/directory-sync/run"],
      ["POST", "/directory-sync/enable"],
    ] as const) {
      const r = await f.cp.call(method, f.cp.org(path));
      expect(r.status).toBe(409);
      expect(r.json.code).toBe("directory_sync_not_configured");
    }
  });

  test("the secret is stored KMS-wrapped and never returned", async () => {
    const cfg = await configure(f);
    expect(cfg).toMatchObject({
      tenant_id: f.graph.tenantId,
      client_id: f.graph.clientId,
      app_id: f.graph.appId,
      dry_run: false,
      create_users: true,
      interval_seconds: 3600,
      enabled: false,
      has_client_secret: true,
    });
    expect(JSON.stringify(cfg)).not.toContain(f.graph.clientSecret);
    const got = await f.cp.call("GET", f.cp.org("/directory-sync"));
    expect(got.text).not.toContain(f.graph.clientSecret);
    const row = (await f.cp.deps.db.select().from(tables(f.cp.deps.db).directorySyncConfigs))[0]!;
    expect(row.wrappedClientSecret).not.toContain(f.graph.clientSecret);
    expect(new TextDecoder().decode(f.cp.deps.kms.unwrap(row.wrappedClientSecret, `directory-sync:${f.cp.orgId}`))).toBe(f.graph.clientSecret);
    // Re-setting without a secret keeps the stored one.
    const again = await f.cp.call("PUT", f.cp.org("/directory-sync"), { body: { ...configBody(f, { dry_run: true }), client_secret: undefined } });
    expect(again.status).toBe(200);
    expect((await f.cp.deps.db.select().from(tables(f.cp.deps.db).directorySyncConfigs))[0]!.wrappedClientSecret).toBe(row.wrappedClientSecret);
  });

  test("bad ids, http URLs and a missing first secret are refused; non-admins get 401", async () => {
    const bad = await f.cp.call("PUT", f.cp.org("/directory-sync"), { body: configBody(f, { client_id: "not-a-guid" }) });
    expect(bad.status).toBe(422);
    expect(bad.json.detail).toContain("client_id");
    const http = await f.cp.call("PUT", f.cp.org("/directory-sync"), { body: configBody(f, { graph_url: "http://graph.example" }) });
    expect(http.status).toBe(422);
    expect(http.json.detail).toContain("graph_url must use https");
    const noSecret = await f.cp.call("PUT", f.cp.org("/directory-sync"), { body: { ...configBody(f), client_secret: undefined } });
    expect(noSecret.status).toBe(422);
    expect(noSecret.json.detail).toContain("client_secret is required");
    const anon = await f.cp.call("PUT", f.cp.org("/directory-sync"), { body: configBody(f), token: null });
    expect(anon.status).toBe(401);
  });
});

describe("sync", () => {
  test("first sync: a group per enabled role, users created from mail or UPN, group members included", async () => {
    await configure(f);
    const report = await run(f);
    expect(report.status).toBe("succeeded");
    expect(report.errors).toEqual([]);
    const groups = await f.cp.deps.db.select().from(tables(f.cp.deps.db).groups);
    expect(groups.map((g) => g.name).sort()).toEqual(["chat-admins", "chat-users"]);
    expect(groups.every((g) => g.source === "directory")).toBe(true);
    expect(await memberships(f)).toEqual({
      "chat-admins": ["bob.builder@contoso.onmicrosoft.com"],
      "chat-users": ["alice@example.com", "carol@example.com", "frank@example.com"],
    });
    const users = await f.cp.deps.db.select().from(tables(f.cp.deps.db).users);
    // dave (disabled account) and erin (default access / disabled role / nested group only) are not created.
    expect(users.map((u) => u.email).sort()).toEqual(["alice@example.com", "bob.builder@contoso.onmicrosoft.com", "carol@example.com", "frank@example.com"]);
    expect(users.find((u) => u.email === "alice@example.com")).toMatchObject({ source: "directory", externalId: f.people.alice.id, displayName: "Alice" });
    expect(report.counts).toMatchObject({ groups_created: 2, users_created: 4, memberships_added: 4, memberships_removed: 0, users_disabled: 0 });
    expect(report.changes).toContainEqual({ kind: "create_user", email: "bob.builder@contoso.onmicrosoft.com", display_name: "Bob", external_id: f.people.bob.id });
    // A second run with nothing changed has nothing to do.
    const second = await run(f);
    expect(second.changes).toEqual([]);
  });

  test("a role added and a role removed: memberships follow; manual memberships stay", async () => {
    await configure(f);
    await run(f);
    const admins = (await ensureGroup(f.cp.deps.db, f.cp.orgId, "chat-admins", "manual")).group;
    const manual = (await upsertUserByEmail(f.cp.deps.db, f.cp.orgId, { email: "mallory@example.com", source: "manual" })).user;
    await addGroupMember(f.cp.deps.db, f.cp.orgId, admins.id, manual.id, "manual");

    const auditors = f.graph.addRole("chat-auditors");
    f.graph.assign(auditors.id, f.people.alice);
    f.graph.removeRole(f.roles.admins.id);
    const report = await run(f);
    expect(report.status).toBe("succeeded");
    expect(await memberships(f)).toEqual({
      "chat-admins": ["mallory@example.com (manual)"],
      "chat-auditors": ["alice@example.com"],
      "chat-users": ["alice@example.com", "carol@example.com", "frank@example.com"],
    });
    expect(report.changes).toEqual([
      { kind: "create_group", group: "chat-auditors" },
      { kind: "add_member", group: "chat-auditors", email: "alice@example.com", user_id: expect.stringMatching(/^usr_/) },
      { kind: "remove_member", group: "chat-admins", email: "bob.builder@contoso.onmicrosoft.com", user_id: expect.stringMatching(/^usr_/) },
    ]);
    // Users are never deleted.
    expect((await f.cp.deps.db.select().from(tables(f.cp.deps.db).users)).map((u) => u.email)).toContain("bob.builder@contoso.onmicrosoft.com");
  });

  test("a disabled account loses its memberships and is disabled, not deleted; re-enabled it comes back", async () => {
    await configure(f);
    await run(f);
    f.people.carol.accountEnabled = false;
    const report = await run(f);
    expect((await memberships(f))["chat-users"]).toEqual(["alice@example.com", "frank@example.com"]);
    const carol = (
      await f.cp.deps.db
        .select()
        .from(tables(f.cp.deps.db).users)
        .where(eq(tables(f.cp.deps.db).users.email, "carol@example.com"))
    )[0];
    expect(carol?.disabled).toBe(true);
    expect(report.counts).toMatchObject({ users_disabled: 1, memberships_removed: 1 });

    f.people.carol.accountEnabled = true;
    const back = await run(f);
    expect(back.counts).toMatchObject({ users_enabled: 1, memberships_added: 1 });
    expect((await memberships(f))["chat-users"]).toContain("carol@example.com");
  });

  test("a dry run reports every change and changes nothing", async () => {
    await configure(f, { dry_run: true });
    const before = await dbSnapshot(f);
    const report = await run(f);
    expect(report.dry_run).toBe(true);
    expect(report.status).toBe("succeeded");
    expect(report.counts).toMatchObject({ groups_created: 2, users_created: 4, memberships_added: 4 });
    expect(await dbSnapshot(f)).toEqual(before);
    const shown = await f.cp.call("GET", f.cp.org("/directory-sync/report"));
    expect(shown.json.dry_run).toBe(true);
    expect(shown.json.changes).toHaveLength(report.changes.length);

    // Applied for real, then a dry run of a removal leaves the membership in place.
    await run(f, { dry_run: false });
    f.graph.unassign(f.roles.users.id, f.people.alice.id);
    const applied = await dbSnapshot(f);
    const dry = await run(f);
    expect(dry.changes).toContainEqual({ kind: "remove_member", group: "chat-users", email: "alice@example.com", user_id: expect.stringMatching(/^usr_/) });
    expect(await dbSnapshot(f)).toEqual(applied);
  });

  test("without create-users, unknown users are skipped and existing ones are synced", async () => {
    await upsertUserByEmail(f.cp.deps.db, f.cp.orgId, { email: "Alice@Example.com", source: "manual" });
    await configure(f, { create_users: false });
    const report = await run(f);
    expect(await f.cp.deps.db.select().from(tables(f.cp.deps.db).users)).toHaveLength(1);
    expect(await memberships(f)).toEqual({ "chat-users": ["alice@example.com"] });
    expect(report.counts.users_skipped).toBe(3);
    expect(report.changes).toContainEqual({ kind: "skip_user", email: "carol@example.com", external_id: f.people.carol.id, reason: "no service user with this email and create-users is off" });
  });

  test("a wrong secret fails the run with a clear error and changes nothing", async () => {
    await configure(f, { client_secret: "wrong-secret" });
    const before = await dbSnapshot(f);
    const report = await run(f);
    expect(report.status).toBe("failed");
    expect(report.errors).toHaveLength(1);
    expect(report.errors[0]).toStartWith("the client secret was refused by the token endpoint: invalid_client: AADSTS7000215");
    expect(JSON.stringify(report)).not.toContain("wrong-secret");
    expect(await dbSnapshot(f)).toEqual(before);
  });

  test("a missing permission fails the run naming the permission, and changes nothing", async () => {
    await configure(f);
    await run(f);
    f.graph.missingPermissions.add("GroupMember.Read.All");
    f.graph.unassign(f.roles.users.id, f.people.alice.id);
    const before = await dbSnapshot(f);
    const report = await run(f);
    expect(report.status).toBe("failed");
    expect(report.errors[0]).toContain("403");
    expect(report.errors[0]).toContain("GroupMember.Read.All");
    expect(await dbSnapshot(f)).toEqual(before);

    f.graph.missingPermissions = new Set(["Application.Read.All"]);
    expect((await run(f)).errors[0]).toContain("application permission Application.Read.All");
    f.graph.missingPermissions = new Set(["User.Read.All"]);
    expect((await run(f)).errors[0]).toContain("application permission User.Read.All");
  });

  test("a wrong app id is reported as such", async () => {
    await configure(f, { app_id: "99999999-9999-4999-8999-999999999999" });
    const report = await run(f);
    expect(report.status).toBe("failed");
    expect(report.errors[0]).toContain("no service principal for app id 99999999-9999-4999-8999-999999999999");
  });

  test("paging: assignments and group members across several pages", async () => {
    const many = Array.from({ length: 7 }, (_, i) => f.graph.addUser(`Pager${i}`));
    for (const u of many.slice(0, 4)) f.graph.assign(f.roles.admins.id, u);
    const big = f.graph.addGroup(
      "Big",
      many.slice(4).map((u) => u.id),
    );
    f.graph.assign(f.roles.admins.id, big);
    f.graph.pageSize = 2;
    await configure(f);
    const report = await run(f);
    expect(report.status).toBe("succeeded");
    expect((await memberships(f))["chat-admins"]).toEqual(["bob.builder@contoso.onmicrosoft.com", ...many.map((u) => u.mail!)].sort());
    const followed = f.graph.requests.filter((r) => r.query.includes("%24skiptoken") || r.query.includes("$skiptoken"));
    expect(followed.filter((r) => r.path.endsWith("/appRoleAssignedTo")).length).toBeGreaterThanOrEqual(5); // 11 assignments / 2 per page
    expect(followed.some((r) => r.path.endsWith("/members"))).toBe(true);
  });

  describe("a page that fails fails the whole run: recorded as failed, nothing applied", () => {
    // After a first good sync, alice loses her role in Entra; a run that could not read
    // everything must not apply that (nor, worse, read the unread rest as removals).
    async function afterFirstSync() {
      const many = Array.from({ length: 5 }, (_, i) => f.graph.addUser(`Pager${i}`));
      for (const u of many) f.graph.assign(f.roles.admins.id, u);
      f.graph.pageSize = 2;
      await configure(f);
      expect((await run(f)).status).toBe("succeeded");
      f.graph.unassign(f.roles.users.id, f.people.alice.id);
      return dbSnapshot(f);
    }
    const assignmentsPage = (n: "first" | "later") => (r: { path: string; query: URLSearchParams }) =>
      r.path.endsWith("/appRoleAssignedTo") && (n === "first" ? !r.query.has("$skiptoken") : r.query.has("$skiptoken"));
    const membersPage = (n: "first" | "later") => (r: { path: string; query: URLSearchParams }) =>
      r.path.endsWith("/members") && (n === "first" ? !r.query.has("$skiptoken") : r.query.has("$skiptoken"));

    for (const [name, match, status, errorText] of [
      ["a 404 on an @odata.nextLink page of the assignments", assignmentsPage("later"), 404, "answered 404 for page 2 of the app role assignments"],
      ["a 404 on the assignments themselves (appRoleAssignedTo)", assignmentsPage("first"), 404, "answered 404 for the app role assignments"],
      ["a 500 on an @odata.nextLink page of the assignments", assignmentsPage("later"), 500, "HTTP 500"],
      ["a 404 on a group's members (the group vanished)", membersPage("first"), 404, "answered 404 for the members of group"],
      ["a 404 on an @odata.nextLink page of a group's members", membersPage("later"), 404, "answered 404 for page 2 of the members of group"],
      ["a 404 on a directly assigned user", (r: { path: string }) => r.path.startsWith("/v1.0/users/"), 404, "answered 404 for user"],
    ] as const) {
      test(name, async () => {
        const before = await afterFirstSync();
        f.graph.fail(match, status);
        const report = await run(f);
        expect(report.status).toBe("failed");
        expect(report.errors).toHaveLength(1);
        expect(report.errors[0]).toContain(errorText);
        expect(report.changes).toEqual([]);
        expect(await dbSnapshot(f)).toEqual(before);
        // Once Graph answers again, the next run applies the change.
        f.graph.clearFailures();
        expect((await run(f)).status).toBe("succeeded");
        expect((await memberships(f))["chat-users"]).not.toContain("alice@example.com");
      });
    }

    test("a page without a value array, or a nextLink that repeats itself", async () => {
      const before = await afterFirstSync();
      f.graph.fail(assignmentsPage("later"), 200, { body: { "@odata.context": "x" } });
      let report = await run(f);
      expect(report.status).toBe("failed");
      expect(report.errors[0]).toContain("without a value array");
      expect(await dbSnapshot(f)).toEqual(before);
      f.graph.clearFailures();
      const loop = `${f.graph.url}/v1.0/servicePrincipals/${f.graph.servicePrincipalId}/appRoleAssignedTo?$skiptoken=0`;
      f.graph.fail(assignmentsPage("later"), 200, { body: { value: [], "@odata.nextLink": loop } });
      report = await run(f);
      expect(report.status).toBe("failed");
      expect(report.errors[0]).toContain("same @odata.nextLink twice");
      expect(await dbSnapshot(f)).toEqual(before);
    });
  });

  test("429 with Retry-After is waited out and the request retried", async () => {
    await configure(f);
    f.graph.throttle(2, 1);
    const started = Date.now();
    const report = await run(f);
    expect(report.status).toBe("succeeded");
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    const throttled = f.graph.requests.findIndex((r) => r.status === 429);
    expect(f.graph.requests.filter((r) => r.status === 429)).toHaveLength(2);
    // Each retry came after the Retry-After second, to the same URL.
    for (const i of [throttled, throttled + 1]) {
      const [a, b] = [f.graph.requests[i]!, f.graph.requests[i + 1]!];
      expect(b.path).toBe(a.path);
      expect(b.at - a.at).toBeGreaterThanOrEqual(950);
    }
    expect((await memberships(f))["chat-users"]).toHaveLength(3);
  });
});

describe("enable, report and the scheduler", () => {
  test("enable starts a run now; the report shows when, counts, changes and errors", async () => {
    await configure(f);
    const enabled = await f.cp.call("POST", f.cp.org("/directory-sync/enable"));
    expect(enabled.status).toBe(200);
    expect(enabled.json.enabled).toBe(true);
    let report: any;
    for (let i = 0; i < 200; i++) {
      report = (await f.cp.call("GET", f.cp.org("/directory-sync/report"))).json;
      if (report.status !== "running") break;
      await Bun.sleep(25);
    }
    expect(report.status).toBe("succeeded");
    expect(Date.parse(report.started_at)).toBeLessThanOrEqual(Date.parse(report.finished_at));
    expect(report.counts).toMatchObject({ groups_created: 2, users_created: 4, memberships_added: 4, app_roles: 3 });
    expect(report.changes.length).toBe(2 + 4 + 4);
    expect(report.errors).toEqual([]);
  });

  test("the scheduler runs enabled organizations when due, and not before", async () => {
    let now = Date.now();
    f.cp.deps.now = () => now;
    await configure(f, { interval_seconds: 600 });
    await f.cp.call("POST", f.cp.org("/directory-sync/disable"));
    const stop = startDirectorySyncScheduler(f.cp.deps, { tickMs: 20 });
    try {
      await Bun.sleep(150);
      expect(await f.cp.deps.db.select().from(tables(f.cp.deps.db).directorySyncRuns)).toHaveLength(0); // not enabled

      await f.cp.deps.db.update(tables(f.cp.deps.db).directorySyncConfigs).set({ enabled: true });
      await waitRuns(f, 1);
      f.graph.addRole("late-role");
      now += 300_000; // half the interval: not due
      await Bun.sleep(150);
      expect(await f.cp.deps.db.select().from(tables(f.cp.deps.db).directorySyncRuns)).toHaveLength(1);
      now += 300_000; // due
      await waitRuns(f, 2);
      expect((await f.cp.deps.db.select().from(tables(f.cp.deps.db).groups)).map((g) => g.name)).toContain("late-role");
    } finally {
      await stop();
    }
  });
});

async function waitRuns(f: Fixture, n: number) {
  for (let i = 0; i < 400; i++) {
    const runs = await f.cp.deps.db.select().from(tables(f.cp.deps.db).directorySyncRuns);
    if (runs.length >= n && runs.every((r) => r.status !== "running")) return;
    await Bun.sleep(20);
  }
  throw new Error(`timed out waiting for ${n} directory sync run(s)`);
}
