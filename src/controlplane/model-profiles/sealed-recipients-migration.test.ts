// The migration that adds model_profiles.sealed_recipients fills it for keys stored before it,
// from the credential-sync recipients of the replicas in sealed_to, on SQLite and (with
// SVC_TEST_POSTGRES_URL) on PostgreSQL.
import { describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";
import { drizzle as drizzlePg } from "drizzle-orm/bun-sql";
import { drizzle } from "drizzle-orm/bun-sqlite";
import { randomBytes } from "node:crypto";
import { openStore } from "../db/index.ts";
import { embeddedMigrations } from "../db/embedded-migrations.ts";
import { MIGRATIONS } from "../db/migrations/index.ts";
import { MIGRATIONS as PG_MIGRATIONS } from "../db/migrations-pg/index.ts";
import { TEST_POSTGRES_URL } from "../db/test-store.ts";

/** Rows as a release before the column left them: two replicas, a keyed profile sealed to one, a keyless one. */
const ROWS = [
  "INSERT INTO organizations (id, name) VALUES ('org_1', 'A')",
  "INSERT INTO workspaces (id, org_id, name) VALUES ('ws_1', 'org_1', 'default')",
  "INSERT INTO agents (id, org_id, workspace_id, name) VALUES ('agt_1', 'org_1', 'ws_1', 'a')",
  "INSERT INTO installations (id, org_id, workspace_id, agent_id, name, platform) VALUES ('inst_1', 'org_1', 'ws_1', 'agt_1', 'i', 'chatui')",
  "INSERT INTO runtime_replicas (id, installation_id, credential_sync_recipient, bootstrapped_at) VALUES ('rep_1', 'inst_1', 'age1one', 1), ('rep_2', 'inst_1', 'age1two', 1)",
  `INSERT INTO model_profiles (id, org_id, workspace_id, display_name, endpoint, auth_type, default_model, models, api_key_sealed, sealed_to)
     VALUES ('mp_1', 'org_1', 'ws_1', 'keyed', 'https://x', 'api_key', 'm', '["m"]', 'c2VhbGVk', '["rep_1","rep_gone"]'),
            ('mp_2', 'org_1', 'ws_1', 'keyless', 'https://x', 'none', 'm', '["m"]', NULL, '[]')`,
];

describe("migration sealed_recipients", () => {
  test("SQLite: keys stored before it get their replicas' current recipients", async () => {
    const before = MIGRATIONS.findIndex((m) => m.tag === "0002_sealed_recipients");
    expect(before).toBeGreaterThan(0);
    const file = join(mkdtempSync(join(tmpdir(), "svc-mig-")), "cp.db");
    const old = new Database(file, { strict: true });
    const orm = drizzle({ client: old }) as unknown as { dialect: { migrate(m: unknown, s: unknown, c: object): void }; session: unknown };
    orm.dialect.migrate(embeddedMigrations(MIGRATIONS.slice(0, before)), orm.session, {});
    for (const sql of ROWS) old.run(sql);
    old.close();

    const store = openStore(file);
    await store.migrate();
    await store.close();
    const after = new Database(file, { strict: true });
    const rows = after.query("SELECT id, sealed_recipients AS r FROM model_profiles ORDER BY id").all() as Array<{ id: string; r: string }>;
    after.close();
    expect(rows.map((x) => [x.id, JSON.parse(x.r)])).toEqual([
      ["mp_1", ["age1one"]],
      ["mp_2", []],
    ]);
  });

  test.skipIf(!TEST_POSTGRES_URL)("PostgreSQL: keys stored before it get their replicas' current recipients", async () => {
    const before = PG_MIGRATIONS.findIndex((m) => m.tag === "0001_sealed_recipients");
    expect(before).toBeGreaterThan(0);
    const name = `svc_mig_${randomBytes(6).toString("hex")}`;
    const admin = new SQL({ url: TEST_POSTGRES_URL!, max: 1 });
    await admin.unsafe(`CREATE DATABASE "${name}"`);
    await admin.close();
    const u = new URL(TEST_POSTGRES_URL!);
    u.pathname = `/${name}`;
    const client = new SQL({ url: u.toString(), max: 1 });
    const orm = drizzlePg({ client }) as unknown as { dialect: { migrate(m: unknown, s: unknown, c: object): Promise<void> }; session: unknown };
    await orm.dialect.migrate(embeddedMigrations(PG_MIGRATIONS.slice(0, before)), orm.session, {});
    for (const sql of ROWS) await client.unsafe(sql);
    await client.close();

    const store = openStore(u.toString(), { maxConnections: 1 });
    await store.migrate();
    await store.close();
    const check = new SQL({ url: u.toString(), max: 1 });
    const rows = (await check.unsafe("SELECT id, sealed_recipients AS r FROM model_profiles ORDER BY id")) as Array<{ id: string; r: unknown }>;
    await check.close();
    const cleanup = new SQL({ url: TEST_POSTGRES_URL!, max: 1 });
    await cleanup.unsafe(`DROP DATABASE "${name}"`).catch(() => {});
    await cleanup.close();
    expect(rows.map((x) => [x.id, typeof x.r === "string" ? JSON.parse(x.r) : x.r])).toEqual([
      ["mp_1", ["age1one"]],
      ["mp_2", []],
    ]);
  });
});
