// drizzle's migrators read a folder; a compiled binary has none, so the same migration records
// are built from the SQL embedded in migrations/index.ts and migrations-pg/index.ts.
import { createHash } from "node:crypto";
import type { MigrationMeta } from "drizzle-orm/migrator";

export type EmbeddedMigration = { tag: string; when: number; breakpoints: boolean; sql: string };

export function fromJournal(journal: { entries: { tag: string; when: number; breakpoints: boolean }[] }, sqlByTag: Record<string, string>): EmbeddedMigration[] {
  return journal.entries.map((e) => {
    const sql = sqlByTag[e.tag];
    if (sql === undefined) throw new Error(`migration ${e.tag} is in the journal but not embedded (add it to its index.ts)`);
    return { tag: e.tag, when: e.when, breakpoints: e.breakpoints, sql };
  });
}

/** drizzle's migration record, with the migration's name (schema-history.ts names it in refusals). */
export type Migration = MigrationMeta & { tag: string };

export function embeddedMigrations(migrations: readonly EmbeddedMigration[]): Migration[] {
  return migrations.map((m) => ({
    tag: m.tag,
    sql: m.sql.split("--> statement-breakpoint"),
    bps: m.breakpoints,
    folderMillis: m.when,
    hash: createHash("sha256").update(m.sql).digest("hex"),
  }));
}
