// Policy features and what a bundle may express during a mixed window (issue 29). A policy
// needs the features its fields use (`conditions` for a condition, `shadow` for shadow mode,
// and whatever later releases add, stored in `policies.requires` so that this release can see
// a feature it does not know). A replica expresses only the features every live replica
// knows: during a rolling upgrade the new replicas serve the same narrower bundle as the old
// ones, so a proxy never sees a policy widen or flip back and forth between polls. Pure.

/** The policy features this release knows how to put in a bundle. */
export const POLICY_FEATURES = ["conditions", "shadow"] as const;

/** The features a policy needs: derived from its fields, plus any stored by a later release. */
export function policyNeeds(p: { condition?: string | null; mode?: string | null; requires?: readonly string[] | null }): string[] {
  const needs = new Set(p.requires ?? []);
  if (p.condition) needs.add("conditions");
  if (p.mode === "shadow") needs.add("shadow");
  return [...needs].sort();
}

/** The features every live replica can express (this release's own, narrowed by the others'). */
export function commonFeatures(own: readonly string[], others: readonly (readonly string[])[]): Set<string> {
  return new Set(own.filter((f) => others.every((o) => o.includes(f))));
}
