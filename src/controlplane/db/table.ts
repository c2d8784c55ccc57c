// One declaration per table, two dialects. A resource folder declares its tables with `table()`
// in its `tables.ts`; the callback is run twice, once with PostgreSQL column builders and once
// with SQLite ones, so the same lines give both schemas and they cannot drift apart.
//
// The declaration is typed with the PostgreSQL builders (services are typed with that schema,
// see store.ts); the SQLite builders offer the same chain (`notNull`, `default`, `primaryKey`,
// `unique`, `references`, `$type`) and give the same JS values, so the SQLite run reuses the
// type. `references(() => other.id)` names the other folder's PostgreSQL column; the SQLite run
// follows it to that table's SQLite twin.
//
// drizzle-kit reads the same files: drizzle.config.ts (SQLite) calls `declareSqliteForDrizzleKit()`
// before the schema is loaded, so each export is then the SQLite table.
import { getTableColumns, is, type SQL, sql } from "drizzle-orm";
import type { BuildExtraConfigColumns } from "drizzle-orm/column-builder";
import * as pg from "drizzle-orm/pg-core";
import * as lite from "drizzle-orm/sqlite-core";

/** The column and constraint builders a declaration may use; the same names in both dialects. */
export type Kit = typeof pgKit;

/** Opaque bytes (audit ciphertext), read back as a Buffer like SQLite's blob. */
const bytea = pg.customType<{ data: Buffer; driverData: Uint8Array }>({
  dataType: () => "bytea",
  fromDriver: (v) => Buffer.from(v),
});

const pgNow: SQL = sql`((extract(epoch from clock_timestamp()) * 1000)::bigint)`;
const sqliteNow: SQL = sql`(cast(unixepoch('subsec') * 1000 as integer))`;

const pgKit = {
  text: pg.text,
  integer: pg.integer,
  /** A float: double precision (SQLite: real). */
  double: (name: string) => pg.doublePrecision(name),
  /** Epoch milliseconds: bigint read as a number (SQLite: integer). */
  millis: (name: string) => pg.bigint(name, { mode: "number" }),
  /** boolean (SQLite: integer 0/1). */
  bool: (name: string) => pg.boolean(name),
  /** A small JSON value: jsonb (SQLite: text in JSON mode). */
  json: <T>(name: string) => pg.jsonb(name).$type<T>(),
  /** Opaque bytes as a Buffer: bytea (SQLite: blob). */
  bytes: (name: string) => bytea(name),
  /** `created_at`: epoch milliseconds, set by the database. */
  createdAt: () => pg.bigint("created_at", { mode: "number" }).notNull().default(pgNow),
  index: pg.index,
  uniqueIndex: pg.uniqueIndex,
  primaryKey: pg.primaryKey,
  /**
   * A text column in byte order, for an index whose ranges are byte ranges (audit/bounds.ts):
   * PostgreSQL's `("col" COLLATE "C")` (queries write the same expression: audit/query.ts
   * bytewise); SQLite's column as it is (BINARY already).
   */
  bytewise: (column: pg.PgColumn): SQL => sql`(${sql.identifier(column.name)} COLLATE "C")`,
};

/** PostgreSQL table → its SQLite twin, for `references()` made in the SQLite run. */
const twins = new WeakMap<object, lite.SQLiteTable>();

function sqliteColumnOf(column: pg.PgColumn | lite.SQLiteColumn): lite.SQLiteColumn {
  if (is(column, lite.SQLiteColumn)) return column;
  const twin = twins.get(column.table);
  const key = Object.entries(getTableColumns(column.table)).find(([, c]) => c === column)?.[0];
  const found = twin && key ? (getTableColumns(twin)[key] as lite.SQLiteColumn | undefined) : undefined;
  if (!found) throw new Error(`table(): no SQLite twin for ${column.name}; declare the referenced table with table()`);
  return found;
}

/** A SQLite builder whose `references()` resolves the PostgreSQL column it is given to its twin. */
function redirecting<B extends object>(builder: B): B {
  const b = builder as unknown as { references?: (ref: () => unknown, actions?: unknown) => unknown };
  const references = b.references?.bind(builder);
  if (references) b.references = (ref, actions) => references(() => sqliteColumnOf(ref() as pg.PgColumn), actions);
  return builder;
}

const sqliteKit = {
  text: (name: string, config?: { enum?: readonly [string, ...string[]] }) => redirecting(lite.text(name, config as never)),
  integer: (name: string) => redirecting(lite.integer(name)),
  double: (name: string) => redirecting(lite.real(name)),
  millis: (name: string) => redirecting(lite.integer(name)),
  bool: (name: string) => redirecting(lite.integer(name, { mode: "boolean" })),
  json: (name: string) => redirecting(lite.text(name, { mode: "json" })),
  bytes: (name: string) => redirecting(lite.blob(name, { mode: "buffer" })),
  createdAt: () => lite.integer("created_at").notNull().default(sqliteNow),
  index: lite.index,
  uniqueIndex: lite.uniqueIndex,
  primaryKey: lite.primaryKey,
  bytewise: (column: lite.SQLiteColumn) => column,
} as unknown as Kit;

let drizzleKitSqlite = false;

/** For drizzle.config.ts only: from now on `table()` returns the SQLite table (drizzle-kit reads exports). */
export function declareSqliteForDrizzleKit(): void {
  drizzleKitSqlite = true;
}

/**
 * Declares a table for both stores. `columns` and `extra` get the builders as `c`:
 * `table("things", (c) => ({ id: c.text("id").primaryKey(), at: c.millis("at").notNull() }), (t, c) => [c.index("things_at").on(t.at)])`.
 */
export function table<N extends string, C extends Record<string, pg.PgColumnBuilderBase>>(
  name: N,
  columns: (c: Kit) => C,
  extra?: (t: BuildExtraConfigColumns<N, C, "pg">, c: Kit) => pg.PgTableExtraConfigValue[],
) {
  const pgTable = pg.pgTable(name, columns(pgKit), extra && ((t) => extra(t, pgKit)));
  const sqliteTable = lite.sqliteTable(
    name,
    columns(sqliteKit) as unknown as Record<string, lite.SQLiteColumnBuilderBase>,
    extra && ((t) => extra(t as never, sqliteKit) as unknown as lite.SQLiteTableExtraConfigValue[]),
  );
  twins.set(pgTable, sqliteTable);
  return drizzleKitSqlite ? (sqliteTable as unknown as typeof pgTable) : pgTable;
}

/** The SQLite twins of a schema of `table()` declarations, under the same keys. */
export function sqliteSchemaOf(schema: Record<string, unknown>): Record<string, lite.SQLiteTable> {
  const out: Record<string, lite.SQLiteTable> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (!is(value, pg.PgTable)) continue;
    const twin = twins.get(value);
    if (!twin) throw new Error(`table ${key} was not declared with table() and has no SQLite twin`);
    out[key] = twin;
  }
  return out;
}
