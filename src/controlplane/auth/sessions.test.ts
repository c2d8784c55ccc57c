// Sessions record how they were authenticated (auth_method); the default organization of a
// sign-in is chosen in one place; the migration adding the column ends older sessions.
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { createHash } from "node:crypto";
import { drizzle } from "drizzle-orm/bun-sqlite";
import type { MigrationMeta } from "drizzle-orm/migrator";
import { type Db, migrate, schema } from "../db/index.ts";
import { MIGRATIONS } from "../db/migrations/index.ts";
import { testControlPlane } from "../testing.ts";
import { PASSWORD, secondOrganization } from "./test-fixtures.ts";
import { addMembership, createSession, defaultOrganization, principalFromSession, sessionAuthenticatedFor } from "./service.ts";
import { signIn } from "./sessions.ts";

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
    addMembership(cp.deps.db, cp.accountId, b.orgId, "member");
    const { raw, body } = await signIn(cp.deps, { email: "owner@example.com", password: PASSWORD });
    expect(body.organization_id).toBe([cp.orgId, b.orgId].sort()[0]!);
    const p = principalFromSession(cp.deps, raw)!;
    expect(p.authMethod).toBe("password");
    const other = body.organization_id === cp.orgId ? b.orgId : cp.orgId;
    expect(sessionAuthenticatedFor(cp.deps.db, p, other)).toBe(true);
    expect(sessionAuthenticatedFor(cp.deps.db, p, "org_not_a_member")).toBe(false);
  });

  test("an SSO session counts only for its own organization; an API token for none", async () => {
    const cp = await testControlPlane();
    const b = await secondOrganization(cp);
    addMembership(cp.deps.db, cp.accountId, b.orgId, "member");
    const { raw } = createSession(cp.deps, cp.accountId, b.orgId, "sso");
    const p = principalFromSession(cp.deps, raw)!;
    expect(p).toMatchObject({ orgId: b.orgId, authMethod: "sso", via: "session" });
    expect(sessionAuthenticatedFor(cp.deps.db, p, b.orgId)).toBe(true);
    expect(sessionAuthenticatedFor(cp.deps.db, p, cp.orgId)).toBe(false);
    expect(sessionAuthenticatedFor(cp.deps.db, { ...p, via: "token" }, b.orgId)).toBe(false);
  });
});

describe("migration 0001_session_auth_method", () => {
  test("applies to a database made before it: adds auth_method (default password) and ends older sessions", () => {
    const db = drizzle({ client: new Database(":memory:", { strict: true }), schema }) as Db;
    const meta = (ms: typeof MIGRATIONS): MigrationMeta[] =>
      ms.map((m) => ({ sql: m.sql.split("--> statement-breakpoint"), bps: m.breakpoints, folderMillis: m.when, hash: createHash("sha256").update(m.sql).digest("hex") }));
    const dialect = (db as unknown as { dialect: { migrate: (m: MigrationMeta[], s: unknown, c: object) => void }; session: unknown });
    expect(MIGRATIONS.map((m) => m.tag)).toContain("0001_session_auth_method");
    dialect.dialect.migrate(meta(MIGRATIONS.slice(0, 1)), dialect.session, {});
    db.$client.run("INSERT INTO organizations (id, name) VALUES ('org_1', 'A')");
    db.$client.run("INSERT INTO accounts (id, email) VALUES ('acc_1', 'a@example.com')");
    db.$client.run("INSERT INTO sessions (id_hash, account_id, org_id, csrf_token, expires_at) VALUES ('h', 'acc_1', 'org_1', 'c', 9999999999999)");
    expect(migrate(db)).toBe(MIGRATIONS.length - 1);
    const cols = db.$client.query("PRAGMA table_info(sessions)").all() as Array<{ name: string; notnull: number; dflt_value: string | null }>;
    expect(cols.find((c) => c.name === "auth_method")).toMatchObject({ notnull: 1, dflt_value: "'password'" });
    expect(db.$client.query("SELECT count(*) AS n FROM sessions").get()).toEqual({ n: 0 });
    db.$client.run("INSERT INTO sessions (id_hash, account_id, org_id, csrf_token, expires_at) VALUES ('h2', 'acc_1', 'org_1', 'c', 1)");
    expect(db.$client.query("SELECT auth_method AS m FROM sessions").get()).toEqual({ m: "password" });
  });
});
