// The control plane's storage, chosen by one setting: a SQLite file (the embedded default, no
// other service needed) or a postgres:// URL (the scale-out backend: several stateless
// control-plane replicas on one database). See README.md in this folder.
import { MIGRATIONS as PG_MIGRATIONS } from "./migrations-pg/index.ts";
import { MIGRATIONS as SQLITE_MIGRATIONS } from "./migrations/index.ts";
import { openPostgres } from "./postgres.ts";
import type { Logger } from "../../log/index.ts";
import { openSqlite } from "./sqlite.ts";
import type { Dialect, QueryLog, Store } from "./store.ts";

export {
  type Db,
  type Dialect,
  type QueryLog,
  type RawStatements,
  type Statement,
  type Store,
  type Tables,
  nextTurn,
  placeholders,
  rawStatements,
  relaxedTransaction,
  rowCount,
  tables,
} from "./store.ts";
export { type DriverRows, driverRows } from "./prepared.ts";

/** The name of the last migration this release knows for the dialect: the schema it runs. */
export function lastMigrationTag(dialect: Dialect): string {
  const list = dialect === "postgres" ? PG_MIGRATIONS : SQLITE_MIGRATIONS;
  return list[list.length - 1]?.tag ?? "";
}

export function isPostgresUrl(location: string): boolean {
  return /^postgres(ql)?:\/\//i.test(location);
}

/** Opens the store at `location`: a postgres:// URL, or a SQLite file path (":memory:" for tests). */
export function openStore(location: string, options: { maxConnections?: number; idleTimeoutSeconds?: number; logQuery?: QueryLog; log?: Pick<Logger, "error"> } = {}): Store {
  const { log, ...pg } = options;
  return isPostgresUrl(location) ? openPostgres({ url: location, ...pg }) : openSqlite(location, { logQuery: options.logQuery, log });
}

/** Opens the store and applies pending migrations. */
export async function openMigrated(location: string): Promise<Store> {
  const store = openStore(location);
  await store.migrate();
  return store;
}
