// Test fixtures for the audit spool's tests: fresh directories and spools opened in them, each
// spool closed (crashed ones included) and each directory removed after every test, since an
// open FileHandle left to the garbage collector is an error in Bun. Used by *.test.ts files only.
import { afterEach } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { AuditSpool, type SpoolOptions } from "./spool.ts";

/** Call at a test file's top: `tmp()` makes a directory, `openSpool()` opens a spool with `defaults` under `opts`. */
export function spoolFixtures(prefix: string, defaults: SpoolOptions = {}) {
  const dirs: string[] = [];
  const opened: AuditSpool[] = [];
  afterEach(async () => {
    for (const s of opened.splice(0)) await s.close().catch(() => {});
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });
  return {
    tmp: (): string => {
      const d = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(d);
      return d;
    },
    openSpool: async (dir: string, opts: SpoolOptions = {}): Promise<AuditSpool> => {
      const s = await AuditSpool.open(dir, { ...defaults, ...opts });
      opened.push(s);
      return s;
    },
  };
}
