// The persisted last good bundle: written atomically (temp + fsync + rename) after every
// bundle the control plane sends, reloaded at start, so decisions continue on it while the
// control plane is unreachable. The ETag comes with it so the first poll can be a 304.
// With it go two times: when the control plane sent this bundle (`fetched_at`) and when it
// last sent or confirmed it unchanged (`confirmed_at`, a 304 counts): after a restart that
// is what `last_success` reports until the control plane answers again. Files written before
// `confirmed_at` existed have `fetched_at` only, which stands in for it; a file whose times
// are missing or unreadable still gives its bundle, with no time. The file is sealed under the
// runtime token (state-dir.ts writeSealed): the front end, same UID, cannot plant a bundle.
import { matches } from "../schema-check.ts";
import { type BundleVersion, PolicyBundle } from "../../contract/bundle.ts";
import { readSealed, writeSealed } from "../state-dir.ts";

export const BUNDLE_FILE = "last-good-bundle.json";

export type LastGood = {
  bundle: PolicyBundle;
  etag: string | null;
  /** When the control plane sent this bundle (a 200). */
  fetchedAt: Date | null;
  /** When the control plane last sent it or confirmed it unchanged (a 304). */
  confirmedAt: Date | null;
};

type Stored = { etag: string | null; fetched_at: string | null; confirmed_at?: string | null; bundle: PolicyBundle };

export function saveLastGood(dir: string, token: string, lg: LastGood): void {
  const stored: Stored = {
    etag: lg.etag,
    fetched_at: lg.fetchedAt?.toISOString() ?? null,
    confirmed_at: lg.confirmedAt?.toISOString() ?? null,
    bundle: lg.bundle,
  };
  writeSealed(dir, BUNDLE_FILE, token, stored);
}

/** A stored time, or null when absent or not a time. */
function storedTime(v: unknown): Date | null {
  if (typeof v !== "string") return null;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : new Date(t);
}

/** The stored bundle, or null when absent, unreadable, not sealed under this token, or of another bundle version. */
export function loadLastGood(dir: string, token: string, version: BundleVersion): LastGood | null {
  const stored = readSealed(dir, BUNDLE_FILE, token) as Stored | null;
  if (stored === null || typeof stored !== "object") return null;
  if (!matches(PolicyBundle, stored.bundle) || stored.bundle.version !== version) return null;
  const fetchedAt = storedTime(stored.fetched_at);
  return { bundle: stored.bundle, etag: typeof stored.etag === "string" ? stored.etag : null, fetchedAt, confirmedAt: storedTime(stored.confirmed_at) ?? fetchedAt };
}
