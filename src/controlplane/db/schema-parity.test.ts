// schema.ts (SQLite) and schema.pg.ts (PostgreSQL) must describe the same tables: services are
// typed with one and run on both. Checked at compile time (row types) and at run time (names,
// nullability, keys, defaults).
import { describe, expect, test } from "bun:test";
import { getTableColumns, getTableName, is, Table } from "drizzle-orm";
import * as pg from "./schema.pg.ts";
import * as sqlite from "./schema.ts";

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type RowTypesMatch = { [K in keyof typeof pg & keyof typeof sqlite]: Same<(typeof pg)[K]["$inferSelect"], (typeof sqlite)[K]["$inferSelect"]> };
type InsertTypesMatch = { [K in keyof typeof pg & keyof typeof sqlite]: Same<(typeof pg)[K]["$inferInsert"], (typeof sqlite)[K]["$inferInsert"]> };
// A table whose row types differ makes one of these `false` and the file stops compiling.
const rows: { [K in keyof RowTypesMatch]: true } = {} as RowTypesMatch;
const inserts: { [K in keyof InsertTypesMatch]: true } = {} as InsertTypesMatch;
void rows;
void inserts;

const tablesOf = (m: Record<string, unknown>) => Object.fromEntries(Object.entries(m).filter(([, v]) => is(v, Table))) as Record<string, Table>;

function describeTable(t: Table) {
  return Object.fromEntries(
    Object.entries(getTableColumns(t)).map(([key, c]) => [key, { name: c.name, notNull: c.notNull, primary: c.primary, hasDefault: c.hasDefault, isUnique: c.isUnique, enumValues: c.enumValues ?? null }]),
  );
}

describe("schema parity", () => {
  test("the same tables under the same export names", () => {
    const a = tablesOf(pg);
    const b = tablesOf(sqlite);
    expect(Object.keys(a).sort()).toEqual(Object.keys(b).sort());
    for (const k of Object.keys(a)) expect(getTableName(a[k]!)).toBe(getTableName(b[k]!));
  });

  test("every column has the same SQL name, nullability, key, default, uniqueness and enum", () => {
    const a = tablesOf(pg);
    const b = tablesOf(sqlite);
    for (const k of Object.keys(a)) expect({ table: k, columns: describeTable(a[k]!) }).toEqual({ table: k, columns: describeTable(b[k]!) });
  });
});
