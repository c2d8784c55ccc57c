// Sessions record how they were authenticated (auth_method); the default organization of a
// sign-in is chosen in one place; the migration adding the column ends older sessions.
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { openStore } from "../db/index.ts";
import { embeddedMigrations } from "../db/embedded-migrations.ts";
import { MIGRATIONS } from "../db/migrations/index.ts";
import { testControlPlane } from "../testing.ts";
import { PASSWORD, secondOrganization } from "./test-fixtures.ts";
import { addMembership, defaultOrganization, principalFromSession, sessionAuthenticatedFor } from "./service.ts";
import { NO_ORIGIN } from "../http/request-gate.ts";
import { createSession, signIn } from "./sessions.ts";

describe("defaultOrganization", () => {
  test("the lowest organization id, whatever the order given", () => {
    expect(defaultOrganization([{ orgId: "org_02" }, { orgId: "org_01" }, { orgId: "org_03" }])?.orgId).toBe("org_01");
    expect(defaultOrganization([])).toBeUndefined();
  });
});

describe("signIn and session binding", () => {
  test("password sign-in opens a password session in the default organization", async () => {
    const cp = await testControlPlane();
    const b = await secondOrganization(cp);
    await addMembership(cp.deps.db, cp.accountId, b.orgId, "member", { by: null, join: "added", at: cp.deps.now() });
    const { raw, body } = await signIn(cp.deps, { email: "owner@example.com", password: PASSWORD });
    expect(body.organization_id).toBe([cp.orgId, b.orgId].sort()[0]!);
    const p = (await principalFromSession(cp.deps, raw))!;
    expect(p.authMethod).toBe("password");
    const other = body.organization_id === cp.orgId ? b.orgId : cp.orgId;
    expect(await sessionAuthenticatedFor(cp.deps.db, p, other)).toBe(true);
    expect(await sessionAuthenticatedFor(cp.deps.db, p, "org_not_a_member")).toBe(false);
  });

  test("an SSO session counts only for its own organization; an API token for none", async () => {
    const cp = await testControlPlane();
    const b = await secondOrganization(cp);
    await addMembership(cp.deps.db, cp.accountId, b.orgId, "member", { by: null, join: "added", at: cp.deps.now() });
    const { raw } = await createSession(cp.deps, cp.accountId, b.orgId, "sso", { at: cp.deps.now() }, NO_ORIGIN);
    const p = (await principalFromSession(cp.deps, raw))!;
    expect(p).toMatchObject({ orgId: b.orgId, authMethod: "sso", via: "session" });
    expect(await sessionAuthenticatedFor(cp.deps.db, p, b.orgId)).toBe(true);
    expect(await sessionAuthenticatedFor(cp.deps.db, p, cp.orgId)).toBe(false);
    expect(await sessionAuthenticatedFor(cp.deps.db, { ...p, via: "token" }, b.orgId)).toBe(false);
  });
});

describe("migration 0001_session_auth_method (SQLite)", () => {
  test("applies to a database made before it: adds auth_method (default password) and ends older sessions", async () => {
    expect(MIGRATIONS.map((m) => m.tag)).toContain("0001_session_auth_method");
    const file = join(mkdtempSync(join(tmpdir(), "svc-mig-")), "cp.db");
    // A database as the first release left it: migration 0000 only, with a session in it.
    const before = new Database(file, { strict: true });
    const old = drizzle({ client: before }) as unknown as { dialect: { migrate(m: unknown, s: unknown, c: object): void }; session: unknown };
    old.dialect.migrate(embeddedMigrations(MIGRATIONS.slice(0, 1)), old.session, {});
    before.run("INSERT INTO organizations (id, name) VALUES ('org_1', 'A')");
    before.run("INSERT INTO accounts (id, email) VALUES ('acc_1', 'a@example.com')");
    before.run("INSERT INTO sessions (id_hash, account_id, org_id, csrf_token, expires_at) VALUES ('h', 'acc_1', 'org_1', 'c', 9999999999999)");
    before.close();

    const store = openStore(file);
    expect(await store.migrate()).toBe(MIGRATIONS.length - 1);
    await store.close();

    const after = new Database(file, { strict: true });
    const cols = after.query("PRAGMA table_info(sessions)").all() as Array<{ name: string; notnull: number; dflt_value: string | null }>;
    expect(cols.find((c) => c.name === "auth_method")).toMatchObject({ notnull: 1, dflt_value: "'password'" });
    expect(after.query("SELECT count(*) AS n FROM sessions").get()).toEqual({ n: 0 });
    after.run("INSERT INTO sessions (id_hash, account_id, org_id, csrf_token, expires_at) VALUES ('h2', 'acc_1', 'org_1', 'c', 1)");
    expect(after.query("SELECT auth_method AS m FROM sessions").get()).toEqual({ m: "password" });
    after.close();
  });
});
