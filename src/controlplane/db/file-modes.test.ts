// The control plane's files are private (issue 20): the data directory 0700 (an existing one is
// tightened at start), the SQLite database and its -wal/-shm files 0600, whatever the umask.
import { describe, expect, test } from "bun:test";
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
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
