// The table declarations (one per table, both dialects: table.ts) and the committed migrations
// agree: drizzle-kit, run on a copy of each migrations folder, finds nothing to generate. A
// column added to a tables.ts without its migrations, or a SQLite twin that drifted from its
// PostgreSQL table, makes drizzle-kit write a file here and the test fail.
import { describe, expect, test } from "bun:test";
import { cpSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { getTableColumns, getTableName, is } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import * as schema from "./schema.ts";
import { sqliteSchemaOf } from "./table.ts";

const root = resolve(import.meta.dir, "../../..");
const dbDir = join(root, "src/controlplane/db");

function generate(dialect: "sqlite" | "postgresql", folder: string): { files: string[]; output: string } {
  const dir = mkdtempSync(join(tmpdir(), "svc-schema-"));
  try {
    const out = join(dir, folder);
    cpSync(join(dbDir, folder), out, { recursive: true });
    const before = readdirSync(out).sort();
    const config = join(dir, "drizzle.config.ts");
    const sqliteMode = dialect === "sqlite" ? `import { declareSqliteForDrizzleKit } from ${JSON.stringify(join(dbDir, "table.ts"))};\ndeclareSqliteForDrizzleKit();\n` : "";
    writeFileSync(config, `${sqliteMode}export default { schema: ${JSON.stringify(join(dbDir, "schema.ts"))}, out: "./${folder}", dialect: "${dialect}" };\n`);
    const run = Bun.spawnSync([join(root, "node_modules/.bin/drizzle-kit"), "generate", "--config", config], { cwd: dir, stdout: "pipe", stderr: "pipe" });
    const output = `${run.stdout.toString()}${run.stderr.toString()}`;
    expect(run.exitCode, output).toBe(0);
    const files = readdirSync(out)
      .sort()
      .filter((f) => !before.includes(f));
    return { files, output };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("one declaration per table", () => {
  test("every table has a SQLite twin with the same SQL name and columns", () => {
    const twins = sqliteSchemaOf(schema);
    const pgTables = Object.entries(schema).filter(([, v]) => is(v, PgTable)) as [string, PgTable][];
    expect(pgTables.length).toBeGreaterThan(20);
    for (const [key, t] of pgTables) {
      const twin = twins[key]!;
      expect(getTableName(twin)).toBe(getTableName(t));
      const names = (x: object) => Object.values(getTableColumns(x as PgTable)).map((c) => [c.name, c.notNull, c.primary, c.hasDefault]);
      expect(names(twin)).toEqual(names(t));
    }
  });

  test("drizzle-kit finds no change to migrate, for SQLite or PostgreSQL", () => {
    for (const [dialect, folder] of [
      ["sqlite", "migrations"],
      ["postgresql", "migrations-pg"],
    ] as const) {
      const { files, output } = generate(dialect, folder);
      expect({ dialect, files }).toEqual({ dialect, files: [] });
      expect(output).toContain("No schema changes");
      // drizzle-kit saw the tables (a dialect mix-up would show none and plan to drop them all).
      expect(output).toContain("audit_records");
    }
  }, 120_000);
});
