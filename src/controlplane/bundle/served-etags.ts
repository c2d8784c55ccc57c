// The ETag each installation's bundle was last served under by this replica, with the revision
// it was compiled at. The ETag names a digest of the body (compile.ts bundleEtag), which only a
// compilation gives; remembering it lets an unchanged poll be answered 304 without compiling
// again (runtime/bundle-poll.ts, runtime/routes.ts). A poll this replica cannot answer from
// here (another replica served the bundle, the revision moved, a restart) compiles once.
import type { BundleVersion } from "../../contract/bundle.ts";

/**
 * One form of an installation's bundle: its version, whether conditions were asked, and with
 * them the policy features it could carry (replicas/service.ts expressibleFeatures: a rolling
 * upgrade changes them without a new revision).
 */
export function bundleForm(version: BundleVersion, conditions: boolean, featuresKey: string): string {
  return conditions ? `${version}:c:${featuresKey}` : `${version}`;
}

/** Entries kept at most (installations × bundle forms); all forgotten when full. */
const MAX_ENTRIES = 16_384;

export class ServedEtags {
  private readonly entries = new Map<string, { revision: number; etag: string }>();

  /** The ETag served for this form (bundleForm) of the installation's bundle at `revision`, or null. */
  get(installationId: string, form: string, revision: number): string | null {
    const e = this.entries.get(`${installationId}|${form}`);
    return e && e.revision === revision ? e.etag : null;
  }

  set(installationId: string, form: string, revision: number, etag: string): void {
    if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
    this.entries.set(`${installationId}|${form}`, { revision, etag });
  }
}

const byApp = new WeakMap<object, ServedEtags>();

/** The replica's one record of served ETags, shared by the route and the 304 shortcut (keyed by the app's deps). */
export function servedEtags(owner: object): ServedEtags {
  let s = byApp.get(owner);
  if (!s) byApp.set(owner, (s = new ServedEtags()));
  return s;
}
