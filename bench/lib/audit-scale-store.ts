// The store behind bench/audit-scale.ts: made once with N records and cached between runs, and a
// copy of it for each run (retention deletes). A control plane's data directory (its master key
// under config/, the owner's token, bench.json) is cached in ~/.cache/svc-bench/ either way:
//   - SQLite: the directory holds controlplane.db too, and the whole directory is copied per run;
//   - PostgreSQL: the records are in a database `bench_audit_scale_<N>` on the shared test server
//     (scripts/postgres-test-server.sh), and each run gets `CREATE DATABASE … TEMPLATE` of it,
//     dropped at the end. Not named svc_*: `postgres-test-server.sh clean` (scripts/test.sh runs
//     it) drops those, and this one takes minutes to make. The test server runs with fsync and
//     synchronous_commit off: its figures are not a durable server's.
import { closeSync, cpSync, existsSync, fsyncSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { SQL } from "bun";

export type StoreKind = "sqlite" | "postgres";

/** One run's copy: its data directory, its SVC_CP_DATABASE (none: the SQLite file in it), and how to remove both. */
export type StoreCopy = { dir: string; database: string | undefined; release(): Promise<void> };

export type ScaleStore = {
  kind: StoreKind;
  label: string;
  /** The cached data directory. */
  cache: string;
  /** Whether the cached store of N records is complete. */
  ready(): Promise<boolean>;
  /** Removes a half-made store and returns SVC_CP_DATABASE for making it afresh in `cache`. */
  begin(): Promise<string | undefined>;
  /** Marks the store complete (after its last record). */
  finish(): Promise<void>;
  copy(): Promise<StoreCopy>;
  /**
   * The cached store itself, removed after the run (`--consume`): for a disk without room for
   * a copy (PostgreSQL 5M: 8.5 GB, and the run adds ~2M records). SQLite's cache is shared
   * between engineers and is never consumed.
   */
  consume(): Promise<StoreCopy>;
};

const cacheRoot = () => join(process.env.XDG_CACHE_HOME ?? join(homedir(), ".cache"), "svc-bench");

export function scaleStore(kind: StoreKind, n: number): ScaleStore {
  return kind === "sqlite" ? sqliteStore(n) : postgresStore(n);
}

function sqliteStore(n: number): ScaleStore {
  const cache = join(cacheRoot(), `audit-scale-${n}`);
  return {
    kind: "sqlite",
    label: "SQLite",
    cache,
    ready: async () => existsSync(join(cache, "complete")),
    async begin() {
      rmSync(cache, { recursive: true, force: true });
      mkdirSync(cache, { recursive: true });
      return undefined;
    },
    finish: async () => writeFileSync(join(cache, "complete"), `${n}\n`),
    async copy() {
      const dir = mkdtempSync(join(tmpdir(), "svc-bench-audit-scale-"));
      cpSync(cache, dir, { recursive: true });
      // The copy on disk before the control plane opens it: its first fsync (a checkpoint's, or a
      // commit's through the file system's journal) otherwise writes back what is left of the fresh
      // 1.2–7.4 GB copy, and that was the baseline's single stall of 0.9–1.5 s (docs/performance.md).
      const copied = openSync(join(dir, "controlplane.db"), "r+");
      fsyncSync(copied);
      closeSync(copied);
      return { dir, database: undefined, release: async () => rmSync(dir, { recursive: true, force: true }) };
    },
    consume: async () => {
      throw new Error("--consume is for PostgreSQL: the SQLite cache is kept (copy it elsewhere to free the disk)");
    },
  };
}

function postgresStore(n: number): ScaleStore {
  const server = process.env.SVC_TEST_POSTGRES_URL || testServer();
  const urlOf = (name: string) => Object.assign(new URL(server), { pathname: `/${name}` }).toString();
  const cache = join(cacheRoot(), `audit-scale-pg-${n}`);
  const template = `bench_audit_scale_${n}`;
  const building = `${template}_build`;
  const admin = async <T>(body: (sql: SQL) => Promise<T>): Promise<T> => {
    const sql = new SQL({ url: server, max: 1 });
    try {
      return await body(sql);
    } finally {
      await sql.close();
    }
  };
  const exists = async (name: string) => admin(async (sql) => (await sql`SELECT 1 FROM pg_database WHERE datname = ${name}`).length > 0);
  return {
    kind: "postgres",
    label: `PostgreSQL (${new URL(server).host}, the shared test server: fsync off)`,
    cache,
    ready: async () => existsSync(join(cache, "complete")) && (await exists(template)),
    async begin() {
      rmSync(cache, { recursive: true, force: true });
      mkdirSync(cache, { recursive: true });
      await admin(async (sql) => {
        await sql.unsafe(`DROP DATABASE IF EXISTS "${building}"`);
        await sql.unsafe(`DROP DATABASE IF EXISTS "${template}"`);
        await sql.unsafe(`CREATE DATABASE "${building}"`);
      });
      return urlOf(building);
    },
    async finish() {
      // the statistics and visibility map a long-lived store would have, copied with it
      const db = new SQL({ url: urlOf(building), max: 1 });
      await db.unsafe("VACUUM ANALYZE");
      await db.close();
      await admin(async (sql) => sql.unsafe(`ALTER DATABASE "${building}" RENAME TO "${template}"`));
      writeFileSync(join(cache, "complete"), `${n}\n`);
    },
    async copy() {
      const dir = mkdtempSync(join(tmpdir(), "svc-bench-audit-scale-pg-"));
      cpSync(cache, dir, { recursive: true });
      const name = `${template}_run_${process.pid}`;
      // FILE_COPY copies the files (one checkpoint) instead of writing the whole store to the WAL
      await admin(async (sql) => {
        await sql.unsafe(`DROP DATABASE IF EXISTS "${name}"`);
        await sql.unsafe(`CREATE DATABASE "${name}" TEMPLATE "${template}" STRATEGY FILE_COPY`);
      });
      return {
        dir,
        database: urlOf(name),
        async release() {
          rmSync(dir, { recursive: true, force: true });
          await admin(async (sql) => sql.unsafe(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
        },
      };
    },
    async consume() {
      rmSync(join(cache, "complete"));
      return {
        dir: cache,
        database: urlOf(template),
        async release() {
          rmSync(cache, { recursive: true, force: true });
          await admin(async (sql) => sql.unsafe(`DROP DATABASE IF EXISTS "${template}" WITH (FORCE)`));
        },
      };
    },
  };
}

function testServer(): string {
  const r = Bun.spawnSync(["bash", "scripts/postgres-test-server.sh"], { stdout: "pipe", stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`the PostgreSQL test server did not start: ${r.stderr.toString().trim()}`);
  return r.stdout.toString().trim();
}
