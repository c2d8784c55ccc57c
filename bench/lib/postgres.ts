// A PostgreSQL server for the benchmark alone, durable as a production one (fsync and
// synchronous_commit on: the test server of scripts/postgres-test-server.sh switches them off),
// in a temporary directory on a free port, stopped and removed at the end. Uses the server
// binaries the Debian package installs (scripts/setup.sh); none found is a skip, not a failure.
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "../../test/support/controlplane-process.ts";

export type BenchPostgres = { url: string; stop(): Promise<void> };

function serverBin(): string | null {
  if (process.env.SVC_PG_BIN) return process.env.SVC_PG_BIN;
  const versions = existsSync("/usr/lib/postgresql") ? readdirSync("/usr/lib/postgresql").sort((a, b) => Number(a) - Number(b)) : [];
  const bin = versions.length > 0 ? join("/usr/lib/postgresql", versions.at(-1)!, "bin") : null;
  return bin && existsSync(join(bin, "pg_ctl")) ? bin : null;
}

/** The server runs as the `postgres` user when this runs as root (it refuses root). */
function run(cmd: string[]): { ok: boolean; err: string } {
  const argv = process.getuid?.() === 0 ? ["runuser", "-u", "postgres", "--", ...cmd] : cmd;
  const r = Bun.spawnSync(argv, { stdout: "pipe", stderr: "pipe" });
  return { ok: r.exitCode === 0, err: r.stderr.toString().trim() };
}

export async function startBenchPostgres(): Promise<BenchPostgres | { skipped: string }> {
  const bin = serverBin();
  if (!bin) return { skipped: "no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)" };
  const dir = mkdtempSync(join(tmpdir(), "svc-bench-pg-"));
  if (process.getuid?.() === 0) {
    const uid = Number(Bun.spawnSync(["id", "-u", "postgres"]).stdout.toString().trim());
    const gid = Number(Bun.spawnSync(["id", "-g", "postgres"]).stdout.toString().trim());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, "data");
  const init = run([join(bin, "initdb"), "-D", data, "-A", "trust", "-U", "postgres", "--no-sync"]);
  if (!init.ok) {
    rmSync(dir, { recursive: true, force: true });
    return { skipped: `initdb failed: ${init.err.slice(0, 300)}` };
  }
  const port = freePort();
  const start = run([join(bin, "pg_ctl"), "-D", data, "-l", join(dir, "server.log"), "-w", "-t", "60", "start", "-o", `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=200`]);
  if (!start.ok) {
    rmSync(dir, { recursive: true, force: true });
    return { skipped: `the server did not start: ${start.err.slice(0, 300)}` };
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    async stop() {
      run([join(bin, "pg_ctl"), "-D", data, "-m", "fast", "-w", "stop"]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
