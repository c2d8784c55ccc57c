// What a proxy asked of the bundle, checked in what it got (issue 29). The proxy asks every
// bundle with `conditions=1` because it evaluates conditions and shadow policies. A control
// plane from before conditions ignores the parameter and sends conditional permits as plain
// ones and shadow denies as enforced ones: taking that bundle would widen policies. So a
// bundle must show that conditions were honoured: its `features` name them (0.2.0 on), or its
// ETag carries the conditions mark `c` (the releases between conditions and 0.2.0). A bundle
// without either is refused; the proxy keeps deciding on its last good bundle (state "stale"),
// or decides nothing when it has none.
import { BUNDLE_FEATURES, type PolicyBundle } from "../../contract/bundle.ts";

/** The ETag of a bundle made with conditions by a release before 0.2.0: `W/"<revision>-v<n>c"`. */
const LEGACY_CONDITIONS_ETAG = /^W\/"\d+-v\d+c"$/;

/** Why the bundle cannot be used (a feature it asked for is missing), or null. Pure. */
export function bundleFeatureProblem(bundle: PolicyBundle, etag: string | null, serverVersion: string | null): string | null {
  const honoured = bundle.features?.includes(BUNDLE_FEATURES.conditions) || (etag !== null && LEGACY_CONDITIONS_ETAG.test(etag));
  if (honoured) return null;
  const by = serverVersion ? `a control plane of version ${serverVersion}` : "a control plane of a version before 0.2.0";
  return `policy bundle revision ${bundle.revision} from ${by} does not carry policy conditions, which this proxy asked for: it would treat conditional permits as plain ones, so it is refused (upgrade every control-plane replica; docs/upgrade.md)`;
}
