// Which svc release a store's schema belongs to, and the refusal of a store from the future
// (issue 29). A binary knows its own migrations; a store migrated by a newer release holds
// migrations this binary does not know. Starting on it anyway is how a downgrade widened
// policies (an old control plane served a conditional permit as a plain one), so the
// migrators refuse: a downgrade is a restore of the backup taken before the upgrade, never an
// in-place start (docs/upgrade.md).
//
// Each migrator also keeps `svc_schema_history` beside drizzle's own migrations table: one row
// per start that changed the schema, naming the release, commit and last migration, so the
// refusal can say which release migrated the store, and an operator can see the store's story.
// Pure but for the DDL texts: the migrators (sqlite.ts, postgres-migrate.ts) run them.
import { COMMIT, VERSION } from "../../version.ts";

/** One migration as the binary embeds it (embedded-migrations.ts). */
export type KnownMigration = { tag: string; folderMillis: number };

/** A row of the history table. */
export type HistoryRow = { version: string; commit: string; lastTag: string; migrations: number; appliedAt: number };

/** The release that writes history rows now. */
export const THIS_RELEASE = { version: VERSION, commit: COMMIT };

export const HISTORY_DDL = {
  sqlite:
    'CREATE TABLE IF NOT EXISTS svc_schema_history (id integer PRIMARY KEY AUTOINCREMENT, version text NOT NULL, "commit" text NOT NULL, last_tag text NOT NULL, migrations integer NOT NULL, applied_at integer NOT NULL)',
  postgres:
    'CREATE TABLE IF NOT EXISTS svc_schema_history (id serial PRIMARY KEY, version text NOT NULL, "commit" text NOT NULL, last_tag text NOT NULL, migrations integer NOT NULL, applied_at bigint NOT NULL)',
} as const;

/** The migrations a store holds that this binary does not know (by their folder time, as drizzle records them). */
export function unknownMigrations(known: readonly KnownMigration[], applied: readonly number[]): number[] {
  const ours = new Set(known.map((m) => m.folderMillis));
  return applied.filter((at) => !ours.has(at)).sort((a, b) => a - b);
}

/** Thrown when the store was migrated by a newer release: the control plane does not start. */
export class StoreFromNewerRelease extends Error {
  readonly code = "store_from_newer_release";
  constructor(readonly detail: { unknown: number[]; newest: HistoryRow | null; known: number }) {
    super(storeFromNewerReleaseMessage(detail));
  }
}

/** The refusal, naming both releases and the way back. */
export function storeFromNewerReleaseMessage(d: { unknown: number[]; newest: HistoryRow | null; known: number }): string {
  const by = d.newest ? `svc ${d.newest.version} (${d.newest.commit}), whose last migration is ${d.newest.lastTag}` : "a newer svc release";
  return (
    `the database was migrated by ${by}: it holds ${d.unknown.length} migration(s) that svc ${VERSION} (${COMMIT}) does not know ` +
    `(this release knows ${d.known}). Starting an older release on a newer schema can widen policies, so it refuses: ` +
    `run the newer release again, or restore the backup taken before the upgrade (docs/upgrade.md "Downgrade")`
  );
}

/** The history row a migrator writes after applying `applied` migrations (none: nothing written). */
export function historyRow(known: readonly KnownMigration[], now: number): HistoryRow {
  return { ...THIS_RELEASE, lastTag: known[known.length - 1]?.tag ?? "", migrations: known.length, appliedAt: now };
}
