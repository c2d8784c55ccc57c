// One proxy per audit spool directory. Two proxies appending to, acknowledging and deleting the
// same segments would damage each other's records, so the daemon takes this lock before it
// opens the spool (whose recovery deletes and repairs files) and releases it after closing it.
//
// Bun has no flock, so the lock is a file, `proxy.lock`, created with O_EXCL and naming its
// holder {pid, host, started_at}; the holder renews its mtime every LOCK_LEASE_MS / 3. A lock
// found in place is stale, and is broken, when
//   - its holder ran on this host and that pid is gone, or is this very process's pid (a
//     restarted container's proxy can get the pid its killed predecessor had) — so a restart
//     after kill -9 is never blocked; or
//   - it was not renewed for LOCK_LEASE_MS: a holder on another host sharing the volume (its
//     pid means nothing here), a pid reused by an unrelated process, or a file left
//     half-written by a crash.
// Otherwise the start is refused with one line naming the directory and the holder.
// Breaking is safe against another starter breaking the same lock: the stale file is renamed
// aside (one rename wins); if what was renamed is not what was judged stale (another proxy broke
// it and took a new lock in between), it is linked back.
import { closeSync, fstatSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, utimesSync, writeSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { join } from "node:path";
import { fsyncDir } from "../durable-file.ts";

export const LOCK_FILE = "proxy.lock";
/** A lock not renewed for this long is stale whoever holds it. */
export const LOCK_LEASE_MS = 30_000;
const ATTEMPTS = 5;

export type LockHolder = { pid: number; host: string; started_at: string };

/** What was found at the lock path: its holder (null when unreadable) and what identifies that file. */
export type SeenLock = { holder: LockHolder | null; text: string; ino: number; mtimeMs: number };

/** Another live proxy holds the directory. */
export class SpoolLockedError extends Error {
  override name = "SpoolLockedError";
  constructor(
    message: string,
    readonly holder: LockHolder | null,
  ) {
    super(message);
  }
}

export type SpoolLockOptions = {
  pid?: number;
  host?: string;
  now?: () => number;
  isAlive?: (pid: number) => boolean;
  leaseMs?: number;
  /** The lock was found replaced or removed while held: another proxy uses the directory. */
  onLost?: (message: string) => void;
};

/** Lock paths this process holds: a second daemon in the same process is refused, not let through as "our own pid". */
const heldHere = new Set<string>();

/** Whether a process with this pid exists (EPERM: it does, as another user). */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "EPERM";
  }
}

function parseHolder(text: string): LockHolder | null {
  try {
    const h = JSON.parse(text) as Partial<LockHolder> | null;
    if (h && Number.isInteger(h.pid) && (h.pid as number) > 0 && typeof h.host === "string" && typeof h.started_at === "string") return h as LockHolder;
  } catch {}
  return null;
}

/** The lock file as it is now, read through one descriptor so content and identity agree; null when absent. */
export function inspectLock(path: string): SeenLock | null {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
  try {
    const st = fstatSync(fd);
    const buf = Buffer.alloc(Math.min(st.size, 4096));
    const n = readSync(fd, buf, 0, buf.length, 0);
    const text = buf.subarray(0, n).toString("utf8");
    return { holder: parseHolder(text), text, ino: st.ino, mtimeMs: st.mtimeMs };
  } finally {
    closeSync(fd);
  }
}

/** Why a lock found in place may be broken, or null when its holder must be presumed alive. */
export function staleReason(seen: SeenLock, me: { pid: number; host: string; now: number; leaseMs: number; isAlive: (pid: number) => boolean }): string | null {
  const age = me.now - seen.mtimeMs;
  if (age > me.leaseMs) return `not renewed for ${Math.round(age / 1000)} s`;
  const h = seen.holder;
  if (h && h.host === me.host) {
    if (h.pid === me.pid) return `its pid ${h.pid} is this process's, left by the proxy this one replaces`;
    if (!me.isAlive(h.pid)) return `its process ${h.pid} is gone`;
  }
  return null;
}

const sameFile = (a: SeenLock, b: SeenLock | null) => b !== null && a.ino === b.ino && a.mtimeMs === b.mtimeMs && a.text === b.text;

/**
 * Remove the lock judged stale (`seen`), unless it was replaced meanwhile. True when the path
 * is free to try again (removed, or already gone).
 */
export function breakStaleLock(path: string, seen: SeenLock): boolean {
  const aside = `${path}.stale-${process.pid}-${randomBytes(4).toString("hex")}`;
  try {
    renameSync(path, aside);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return true; // another starter broke it first
    throw e;
  }
  if (!sameFile(seen, inspectLock(aside))) {
    // Another proxy broke it and took the lock since it was judged: give that lock back.
    try {
      linkSync(aside, path);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") renameSync(aside, path);
    }
    rmSync(aside, { force: true });
    return false;
  }
  rmSync(aside, { force: true });
  return true;
}

export class SpoolLock {
  private timer: ReturnType<typeof setInterval> | null = null;
  private lost = false;
  private released = false;

  private constructor(
    readonly path: string,
    readonly holder: LockHolder,
    private readonly text: string,
    private readonly o: SpoolLockOptions,
  ) {}

  /** Take the directory's lock (creating the directory), or throw SpoolLockedError naming the holder. */
  static acquire(dir: string, o: SpoolLockOptions = {}): SpoolLock {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const path = join(dir, LOCK_FILE);
    const pid = o.pid ?? process.pid;
    const host = o.host ?? hostname();
    const leaseMs = o.leaseMs ?? LOCK_LEASE_MS;
    const now = o.now ?? Date.now;
    if (heldHere.has(path))
      throw new SpoolLockedError(`SVC_PROXY_AUDIT "${dir}" is in use by another proxy (pid ${pid}, this process); each proxy needs its own audit spool directory`, { pid, host, started_at: "" });
    const holder: LockHolder = { pid, host, started_at: new Date(now()).toISOString() };
    const text = `${JSON.stringify(holder)}\n`;
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      if (SpoolLock.create(path, text)) {
        fsyncDir(dir);
        heldHere.add(path);
        return new SpoolLock(path, holder, text, o);
      }
      const seen = inspectLock(path);
      if (!seen) continue; // released meanwhile
      if (!staleReason(seen, { pid, host, now: now(), leaseMs, isAlive: o.isAlive ?? pidAlive })) throw lockedError(dir, seen, host, leaseMs);
      breakStaleLock(path, seen);
    }
    throw new Error(`could not take the lock ${path} after ${ATTEMPTS} attempts: other proxies keep taking it`);
  }

  /** O_EXCL: true when this call created the file (with the holder in it), false when it exists. */
  private static create(path: string, text: string): boolean {
    let fd: number;
    try {
      fd = openSync(path, "wx", 0o600);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "EEXIST") return false;
      throw e;
    }
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } catch (e) {
      closeSync(fd);
      rmSync(path, { force: true });
      throw e;
    }
    closeSync(fd);
    return true;
  }

  /** Renew the lease every LOCK_LEASE_MS / 3 until release(). */
  keepAlive(): void {
    this.timer ??= setInterval(() => this.renew(), Math.max(50, Math.floor((this.o.leaseMs ?? LOCK_LEASE_MS) / 3)));
    this.timer.unref?.();
  }

  /** Touch the lock file, when it is still this holder's; otherwise report it lost (once). */
  renew(): void {
    if (this.released || this.lost) return;
    let current: string | null = null;
    try {
      current = readFileSync(this.path, "utf8");
      if (current === this.text) {
        const t = new Date((this.o.now ?? Date.now)());
        utimesSync(this.path, t, t);
        return;
      }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ENOENT") return; // a passing I/O error: try again next time
    }
    this.lost = true;
    const other = current === null ? null : parseHolder(current);
    this.o.onLost?.(
      `the audit spool lock ${this.path} was ${other ? `taken by pid ${other.pid} on ${other.host}` : current === null ? "removed" : "replaced"}: another proxy may be using this audit spool directory`,
    );
  }

  /** Stop renewing and remove the lock, when it is still this holder's. */
  release(): void {
    if (this.released) return;
    this.released = true;
    if (this.timer) clearInterval(this.timer);
    heldHere.delete(this.path);
    try {
      if (readFileSync(this.path, "utf8") === this.text) rmSync(this.path, { force: true });
    } catch {}
  }
}

function lockedError(dir: string, seen: SeenLock, myHost: string, leaseMs: number): SpoolLockedError {
  const h = seen.holder;
  const who = h ? `pid ${h.pid}${h.host === myHost ? "" : ` on host ${h.host}`}, since ${h.started_at}` : "holder unreadable";
  // Where this process cannot tell whether the holder lives, say when the lock gives way by itself.
  const expiry = !h || h.host !== myHost ? `; if that proxy is gone, its lock expires ${Math.round(leaseMs / 1000)} s after its last renewal` : "";
  return new SpoolLockedError(`SVC_PROXY_AUDIT "${dir}" is in use by another proxy (${who}); each proxy needs its own audit spool directory${expiry}`, h);
}
