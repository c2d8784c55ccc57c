// The control plane's files are private (issue 20): the data directory 0700 (an existing one is
// tightened at start, unless others share it: then refused and left alone), the SQLite database and its -wal/-shm files 0600, whatever the umask.
import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CommandFailure } from "../../command/index.ts";
import { ensureDataDir } from "../config.ts";
import { openMigrated } from "./index.ts";

const mode = (p: string) => statSync(p).mode & 0o777;

describe("file modes", () => {
  test("an existing data directory is tightened to 0700", () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-modes-"));
    try {
      const data = join(dir, "data");
      ensureDataDir(data);
      expect(mode(data)).toBe(0o700);
      chmodSync(data, 0o755);
      ensureDataDir(data);
      expect(mode(data)).toBe(0o700);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a shared directory (world-writable, sticky: like /tmp) or another user's is refused, naming it, and never changed", () => {
    // a directory of this test's own with /tmp's mode: never /tmp itself
    const dir = mkdtempSync(join(tmpdir(), "svc-modes-"));
    try {
      chmodSync(dir, 0o1777);
      expect(() => ensureDataDir(dir)).toThrow(
        new CommandFailure(
          `the data directory ${dir} is shared (world-writable with the sticky bit, like /tmp) and is left as it is; set SVC_CP_DATA_DIR or --data-dir to a directory of its own, e.g. ${join(dir, "svc-controlplane")}`,
          2,
          "data_dir_refused",
        ),
      );
      expect(statSync(dir).mode & 0o7777).toBe(0o1777);
      // the way out it names works: a subdirectory is made 0700, the shared one stays as it was
      ensureDataDir(join(dir, "svc-controlplane"));
      expect(mode(join(dir, "svc-controlplane"))).toBe(0o700);
      expect(statSync(dir).mode & 0o7777).toBe(0o1777);

      const theirs = join(dir, "theirs");
      mkdirSync(theirs, { mode: 0o755 });
      const me = process.getuid!();
      if (me === 0) {
        chownSync(theirs, 65534, 65534);
        expect(() => ensureDataDir(theirs)).toThrow(`the data directory ${theirs} belongs to user 65534, not to this user (0), and is left as it is`);
        expect(mode(theirs)).toBe(0o755);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("the database and its WAL files are 0600, a 0644 one is tightened", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-modes-"));
    const old = process.umask(0o022);
    try {
      const file = join(dir, "controlplane.db");
      const store = await openMigrated(file);
      for (const f of [file, `${file}-wal`, `${file}-shm`]) expect({ f, mode: mode(f) }).toEqual({ f, mode: 0o600 });
      await store.close();
      const other = join(dir, "old.db");
      writeFileSync(other, "");
      chmodSync(other, 0o644);
      const again = await openMigrated(other);
      expect(mode(other)).toBe(0o600);
      await again.close();
    } finally {
      process.umask(old);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
