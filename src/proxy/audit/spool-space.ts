// The audit spool's disk space: what it reports (ok, low, full) and the error a decision gets
// while the spool cannot take its record. "full" is a fact learned from a failed write (ENOSPC,
// EDQUOT), not a guess from free bytes; it ends when the filesystem has room again (the
// control plane took the backlog and its segments were deleted, or an operator freed space).
// SpoolSpace holds one spool's state, with its free bytes sampled.
import { statfsSync } from "node:fs";
import type { SpoolStatus } from "../../contract/local-api.ts";

/** Below this many free bytes the spool reports `low` and the proxy warns (SVC_PROXY_AUDIT_LOW_SPACE). */
export const DEFAULT_LOW_SPACE_BYTES = 64 * 1024 * 1024;
/** A full spool takes records again once this much is free: room for a few batches. */
export const RESUME_FREE_BYTES = 1024 * 1024;
/** The smallest spool volume docs/proxy.md recommends; a smaller one is warned about at start. */
export const MIN_SPOOL_VOLUME_BYTES = 256 * 1024 * 1024;

/** What /readyz, `svc policy show`, the heartbeat and the console say about the spool (contract SpoolStatus). */
export type SpoolHealth = SpoolStatus;

/** The errors of a write that mean "no room": the disk or the user's quota is full. */
export function isNoSpace(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException | null)?.code;
  return code === "ENOSPC" || code === "EDQUOT";
}

/** The spool filesystem's size and the bytes an unprivileged writer may still use (f_bavail); null when statfs fails. */
export function spaceOf(dir: string): { free: number; total: number } | null {
  try {
    const s = statfsSync(dir);
    return { free: Number(s.bavail) * Number(s.bsize), total: Number(s.blocks) * Number(s.bsize) };
  } catch {
    return null;
  }
}

export const freeBytes = (dir: string): number | null => spaceOf(dir)?.free ?? null;

const UNITS: [number, string][] = [
  [1024 ** 3, "GiB"],
  [1024 ** 2, "MiB"],
  [1024, "KiB"],
];

export function formatBytes(n: number | null): string {
  if (n === null) return "unknown";
  for (const [size, unit] of UNITS) if (n >= size) return `${(n / size).toFixed(1)} ${unit}`;
  return `${n} bytes`;
}

/** The sentence /readyz and `svc policy show` give while the spool is full. */
export function spoolFullReason(h: Pick<SpoolHealth, "path" | "free_bytes">): string {
  return `spool_full: the audit spool ${h.path} is full (${formatBytes(h.free_bytes)} free); decisions are refused until the control plane takes the backlog or space is freed`;
}

/**
 * A record could not be spooled because the spool's disk is full: the decision is refused
 * with 503 `spool_full` (the call does not run), never a bare 500.
 */
export class SpoolFullError extends Error {
  override name = "SpoolFullError";
  readonly code = "spool_full";
  readonly status = 503;
  constructor(
    readonly path: string,
    readonly freeBytes: number | null,
    cause?: unknown,
  ) {
    super(
      `the audit spool ${path} is full (${formatBytes(freeBytes)} free): the decision was refused and the call not run; it resumes by itself once the control plane takes the backlog or space is freed`,
      { cause },
    );
  }
}

/** How often a full spool looks for room again, and how long a free-bytes sample is reused. */
export const SPACE_CHECK_MS = 1000;

export type SpaceOptions = {
  /** Below this many free bytes the spool reports `low`. */
  lowSpaceBytes: number;
  /** Free bytes of the spool's filesystem; tests stand in for statfs (default: statfs f_bavail). */
  freeBytes?: (dir: string) => number | null;
  /** The state changed (ok, low, full): the daemon logs it. */
  onHealthChange?: (h: SpoolHealth, previous: SpoolHealth["state"]) => void;
};

/** One spool's space state: `full` from a failed write until RESUME_FREE_BYTES are free again. */
export class SpoolSpace {
  /** Set by a write that found no room; appends are refused until space returns. */
  full = false;
  private lastState: SpoolHealth["state"] = "ok";
  private freeCache: { at: number; bytes: number | null } = { at: 0, bytes: null };

  constructor(
    private readonly dir: string,
    private readonly o: SpaceOptions,
  ) {}

  /** The state now (free bytes sampled at most once every SPACE_CHECK_MS); a change is reported. */
  health(): SpoolHealth {
    const free = this.free();
    const state = this.full ? "full" : free !== null && free < this.o.lowSpaceBytes ? "low" : "ok";
    if (state !== this.lastState) {
      const previous = this.lastState;
      this.lastState = state;
      this.o.onHealthChange?.({ state, path: this.dir, free_bytes: free, low_space_bytes: this.o.lowSpaceBytes }, previous);
    }
    return { state, path: this.dir, free_bytes: free, low_space_bytes: this.o.lowSpaceBytes };
  }

  /** Every SPACE_CHECK_MS, and after a segment is deleted: a full spool with room again takes records. */
  check(): void {
    if (this.full) {
      const free = this.free(true);
      if (free !== null && free >= RESUME_FREE_BYTES) this.full = false;
    }
    this.health();
  }

  /** What the callers of a failed write get: a full disk marks the spool full and is a SpoolFullError. */
  refusal(error: unknown): unknown {
    if (!isNoSpace(error)) return error;
    this.full = true;
    this.health();
    return this.fullError(error);
  }

  /** The refusal of a record while the spool is full. */
  fullError(cause?: unknown): SpoolFullError {
    return new SpoolFullError(this.dir, this.free(true), cause);
  }

  private free(fresh = false): number | null {
    const now = Date.now();
    if (fresh || now - this.freeCache.at >= SPACE_CHECK_MS) this.freeCache = { at: now, bytes: (this.o.freeBytes ?? freeBytes)(this.dir) };
    return this.freeCache.bytes;
  }
}
