import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { breakStaleLock, inspectLock, LOCK_FILE, LOCK_LEASE_MS, pidAlive, SpoolLock, SpoolLockedError } from "./spool-lock.ts";

const dirs: string[] = [];
const held: SpoolLock[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), "svc-lock-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const l of held.splice(0)) l.release();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const take = (dir: string, o: Parameters<typeof SpoolLock.acquire>[1] = {}) => {
  const l = SpoolLock.acquire(dir, o);
  held.push(l);
  return l;
};
/** A lock file as another proxy would have left it. */
const plant = (dir: string, holder: unknown, ageMs = 0) => {
  const path = join(dir, LOCK_FILE);
  writeFileSync(path, typeof holder === "string" ? holder : `${JSON.stringify(holder)}\n`);
  if (ageMs) {
    const t = new Date(Date.now() - ageMs);
    utimesSync(path, t, t);
  }
  return path;
};
const refusal = (fn: () => unknown): SpoolLockedError => {
  try {
    fn();
  } catch (e) {
    if (e instanceof SpoolLockedError) return e;
    throw e;
  }
  throw new Error("expected a refusal");
};
const OTHER_PID = 2 ** 22 + 1; // above the largest pid_max Linux allows: never alive

describe("taking the lock", () => {
  test("creates proxy.lock (0600) naming pid and host; release removes it", () => {
    const dir = join(tmp(), "spool");
    const l = take(dir);
    const path = join(dir, LOCK_FILE);
    expect(JSON.parse(readFileSync(path, "utf8"))).toEqual({ pid: process.pid, host: hostname(), started_at: expect.any(String) });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    l.release();
    expect(existsSync(path)).toBe(false);
    take(dir); // free again
  });

  test("a second holder in the same process is refused", () => {
    const dir = tmp();
    take(dir);
    const e = refusal(() => SpoolLock.acquire(dir));
    expect(e.message).toContain(`SVC_PROXY_AUDIT "${dir}" is in use by another proxy (pid ${process.pid}`);
  });

  test("a live proxy on this host: refused with one line naming the directory and its pid", () => {
    const dir = tmp();
    const path = plant(dir, { pid: 777, host: hostname(), started_at: "2026-05-01T10:00:00.000Z" });
    const e = refusal(() => SpoolLock.acquire(dir, { isAlive: (pid) => pid === 777 }));
    expect(e.message).toBe(`SVC_PROXY_AUDIT "${dir}" is in use by another proxy (pid 777, since 2026-05-01T10:00:00.000Z); each proxy needs its own audit spool directory`);
    expect(e.message).not.toContain("\n");
    expect(e.holder?.pid).toBe(777);
    expect(JSON.parse(readFileSync(path, "utf8")).pid).toBe(777); // untouched
  });

  test("a proxy killed with -9 (its pid gone) does not block the restart", () => {
    const dir = tmp();
    plant(dir, { pid: OTHER_PID, host: hostname(), started_at: "2026-05-01T10:00:00.000Z" });
    expect(pidAlive(OTHER_PID)).toBe(false);
    take(dir);
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), "utf8")).pid).toBe(process.pid);
    expect(readdirSync(dir)).toEqual([LOCK_FILE]); // nothing left aside
  });

  test("a lock naming this process's pid (a restarted container's predecessor) is stale", () => {
    const dir = tmp();
    plant(dir, { pid: 12, host: hostname(), started_at: "2026-05-01T10:00:00.000Z" });
    take(dir, { pid: 12, isAlive: () => true });
  });

  test("a holder on another host: refused while renewed, broken once the lease ran out", () => {
    const dir = tmp();
    plant(dir, { pid: 12, host: "replica-a", started_at: "2026-05-01T10:00:00.000Z" });
    const e = refusal(() => SpoolLock.acquire(dir, { pid: 12, isAlive: () => false }));
    expect(e.message).toContain("(pid 12 on host replica-a, since 2026-05-01T10:00:00.000Z)");
    expect(e.message).toContain(`its lock expires ${LOCK_LEASE_MS / 1000} s after its last renewal`);
    plant(dir, { pid: 12, host: "replica-a", started_at: "2026-05-01T10:00:00.000Z" }, LOCK_LEASE_MS + 5_000);
    take(dir);
  });

  test("a live pid that stopped renewing (reused by another program) is stale after the lease", () => {
    const dir = tmp();
    plant(dir, { pid: 777, host: hostname(), started_at: "2026-05-01T10:00:00.000Z" }, LOCK_LEASE_MS + 5_000);
    take(dir, { isAlive: () => true });
  });

  test("an unreadable lock (being written, or torn): refused while fresh, broken when old", () => {
    const dir = tmp();
    plant(dir, "");
    expect(refusal(() => SpoolLock.acquire(dir)).message).toContain("(holder unreadable)");
    plant(dir, '{"pid":', LOCK_LEASE_MS + 5_000);
    take(dir);
  });
});

describe("holding the lock", () => {
  test("renew refreshes the lease; a lock replaced by another proxy is reported lost once", () => {
    const dir = tmp();
    let clock = Date.now() - 60_000;
    const lost: string[] = [];
    const l = take(dir, { now: () => clock, onLost: (m) => lost.push(m) });
    const path = join(dir, LOCK_FILE);
    clock = Date.now() + 60_000;
    l.renew();
    expect(Math.abs(statSync(path).mtimeMs - clock)).toBeLessThan(1000);
    expect(lost).toEqual([]);
    plant(dir, { pid: 999, host: "replica-b", started_at: "2026-05-01T10:00:00.000Z" });
    l.renew();
    l.renew();
    expect(lost).toEqual([`the audit spool lock ${path} was taken by pid 999 on replica-b: another proxy may be using this audit spool directory`]);
    l.release();
    expect(JSON.parse(readFileSync(path, "utf8")).pid).toBe(999); // release leaves another's lock alone
  });

  test("breaking a stale lock gives back a lock another proxy took since it was judged", () => {
    const dir = tmp();
    const path = plant(dir, { pid: OTHER_PID, host: hostname(), started_at: "2026-05-01T10:00:00.000Z" });
    const judged = inspectLock(path)!;
    // meanwhile another starter broke it and took its own lock
    renameSync(path, join(dir, "gone"));
    plant(dir, { pid: 888, host: hostname(), started_at: "2026-05-01T10:00:01.000Z" });
    expect(breakStaleLock(path, judged)).toBe(false);
    expect(JSON.parse(readFileSync(path, "utf8")).pid).toBe(888);
    expect(readdirSync(dir).sort()).toEqual(["gone", LOCK_FILE]);
  });
});
