// Stores for tests: in-memory SQLite by default; with SVC_TEST_POSTGRES_URL (a server the test
// command starts), a fresh PostgreSQL database per store, copied from a migrated template so
// each test starts empty in a few milliseconds.
import { createHash, randomBytes } from "node:crypto";
import { SQL } from "bun";
import { openStore } from "./index.ts";
import { MIGRATIONS } from "./migrations-pg/index.ts";
import type { Db, QueryLog, Store } from "./store.ts";

export const TEST_POSTGRES_URL = process.env.SVC_TEST_POSTGRES_URL || undefined;

let template: Promise<string> | undefined;
let creating: Promise<unknown> = Promise.resolve();

function databaseUrl(server: string, name: string): string {
  const u = new URL(server);
  u.pathname = `/${name}`;
  return u.toString();
}

/** The migrated template database, made once per migration set and kept for later runs. */
async function templateName(server: string): Promise<string> {
  template ??= (async () => {
    const name = `svc_template_${createHash("sha256")
      .update(MIGRATIONS.map((m) => m.sql).join("\0"))
      .digest("hex")
      .slice(0, 12)}`;
    const admin = new SQL({ url: server, max: 1 });
    try {
      const [row] = await admin`SELECT 1 AS present FROM pg_database WHERE datname = ${name}`;
      if (!row) {
        const building = `${name}_${randomBytes(3).toString("hex")}`;
        await admin.unsafe(`CREATE DATABASE "${building}"`);
        const store = openStore(databaseUrl(server, building), { maxConnections: 1 });
        await store.migrate();
        await store.close();
        // Renamed only once complete, so a run that died half-way never leaves a broken template.
        await admin.unsafe(`ALTER DATABASE "${building}" RENAME TO "${name}"`).catch(async () => admin.unsafe(`DROP DATABASE "${building}"`));
      }
    } finally {
      await admin.close();
    }
    return name;
  })();
  return template;
}

/** A URL of a fresh, migrated, empty PostgreSQL database on the test server. */
export async function freshPostgresDatabase(server = TEST_POSTGRES_URL): Promise<string> {
  if (!server) throw new Error("SVC_TEST_POSTGRES_URL is not set");
  const from = await templateName(server);
  const name = `svc_test_${randomBytes(6).toString("hex")}`;
  // CREATE DATABASE … TEMPLATE refuses while another copy of the same template is being made.
  const made = creating.then(async () => {
    const admin = new SQL({ url: server, max: 1 });
    try {
      await admin.unsafe(`CREATE DATABASE "${name}" TEMPLATE "${from}"`);
    } finally {
      await admin.close();
    }
  });
  creating = made.catch(() => undefined);
  await made;
  return databaseUrl(server, name);
}

/** A migrated, empty store: PostgreSQL when SVC_TEST_POSTGRES_URL is set, else in-memory SQLite. */
export async function openTestStore(logQuery?: QueryLog): Promise<Store> {
  if (!TEST_POSTGRES_URL) {
    const store = openStore(":memory:", { logQuery });
    await store.migrate();
    return store;
  }
  return openStore(await freshPostgresDatabase(), { maxConnections: 4, idleTimeoutSeconds: 2, logQuery });
}

/**
 * `db` with every transaction run twice, the first run rolled back: what PostgreSQL does after
 * a serialization failure. A body that changes anything outside the store does it twice.
 */
export function rerunningTransactions(db: Db): Db {
  const rehearsal = new Error("rehearsal: rolled back, run again");
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "transaction") {
        return async (body: (tx: Db) => Promise<unknown>, config?: never) => {
          await target
            .transaction(async (tx) => {
              await body(tx as unknown as Db);
              throw rehearsal;
            })
            .catch((e: unknown) => {
              if (e !== rehearsal) throw e;
            });
          return target.transaction(body as never, config);
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}
