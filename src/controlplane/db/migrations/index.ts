// Migrations embedded in the binary: each SQL file is imported as text so `bun build
// --compile` carries it. Add a line here for every migration drizzle-kit generates.
import journal from "./meta/_journal.json" with { type: "json" };
import m0000 from "./0000_init.sql" with { type: "text" };
import m0001 from "./0001_session_auth_method.sql" with { type: "text" };

const SQL_BY_TAG: Record<string, string> = {
  "0000_init": m0000,
  "0001_session_auth_method": m0001,
};

export type EmbeddedMigration = { tag: string; when: number; breakpoints: boolean; sql: string };

export const MIGRATIONS: EmbeddedMigration[] = journal.entries.map((e) => {
  const sql = SQL_BY_TAG[e.tag];
  if (sql === undefined) throw new Error(`migration ${e.tag} is in the journal but not embedded (add it to migrations/index.ts)`);
  return { tag: e.tag, when: e.when, breakpoints: e.breakpoints, sql };
});
