// The persisted last good bundle: written atomically (temp + fsync + rename) after every
// bundle the control plane sends, reloaded at start, so decisions continue on it while the
// control plane is unreachable. The ETag comes with it so the first poll can be a 304.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { matches } from "./schema-check.ts";
import { type BundleVersion, PolicyBundle } from "../contract/bundle.ts";
import { writeFileDurably } from "./durable-file.ts";
import { tokenFingerprint } from "./state-dir.ts";

export const BUNDLE_FILE = "last-good-bundle.json";

export type LastGood = { bundle: PolicyBundle; etag: string | null; fetchedAt: string };

type Stored = { token_fingerprint: string; etag: string | null; fetched_at: string; bundle: PolicyBundle };

export function saveLastGood(dir: string, token: string, lg: LastGood): void {
  const stored: Stored = { token_fingerprint: tokenFingerprint(token), etag: lg.etag, fetched_at: lg.fetchedAt, bundle: lg.bundle };
  writeFileDurably(join(dir, BUNDLE_FILE), JSON.stringify(stored), 0o600);
}

/** The stored bundle, or null when absent, unreadable, of another token, or of another bundle version. */
export function loadLastGood(dir: string, token: string, version: BundleVersion): LastGood | null {
  let stored: Stored;
  try {
    stored = JSON.parse(readFileSync(join(dir, BUNDLE_FILE), "utf8")) as Stored;
  } catch {
    return null;
  }
  if (stored.token_fingerprint !== tokenFingerprint(token)) return null;
  if (!matches(PolicyBundle, stored.bundle) || stored.bundle.version !== version) return null;
  return { bundle: stored.bundle, etag: stored.etag, fetchedAt: stored.fetched_at };
}
