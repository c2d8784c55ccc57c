// The control plane's storage, chosen by one setting: a SQLite file (the embedded default, no
// other service needed) or a postgres:// URL (the scale-out backend: several stateless
// control-plane replicas on one database). See README.md in this folder.
import { openPostgres } from "./postgres.ts";
import { openSqlite } from "./sqlite.ts";
import type { QueryLog, Store } from "./store.ts";

export { type Db, type Dialect, type QueryLog, type RawStatements, type Store, type Tables, rawStatements, rowCount, tables } from "./store.ts";

export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/** Opens the store at `location`: a postgres:// URL, or a SQLite file path (":memory:" for tests). */
export function openStore(location: string, options: { maxConnections?: number; idleTimeoutSeconds?: number; logQuery?: QueryLog } = {}): Store {
  return isPostgresUrl(location) ? openPostgres({ url: location, ...options }) : openSqlite(location, options.logQuery);
}

/** Opens the store and applies pending migrations. */
export async function openMigrated(location: string): Promise<Store> {
  const store = openStore(location);
  await store.migrate();
  return store;
}
