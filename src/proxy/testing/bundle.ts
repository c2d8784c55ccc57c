// Policy bundles (contract/bundle.ts) for tests of the proxy and of what else reads a bundle
// (svc boot sync, svc policies): a complete bundle with nothing in it, so that each test
// states only the fields it cares about.
import type { BundleIdentity, BundleTool, PolicyBundle } from "../../contract/bundle.ts";
import type { ToolAccess } from "../../contract/manifest.ts";

/**
 * A version-1 bundle, revision 1, of org_1 / ws_1 / inst_1 / agt_1 (the ids of
 * testing/records.ts fakeRecord), with no tools, policies, identities, model profile or
 * recipients, made with conditions (features); `over` replaces any field.
 */
export function fakeBundle(over: Partial<PolicyBundle> = {}): PolicyBundle {
  return {
    version: 1,
    revision: 1,
    generated_at: "2026-01-01T00:00:00.000Z",
    organization_id: "org_1",
    workspace_id: "ws_1",
    installation_id: "inst_1",
    agent_id: "agt_1",
    tools: [],
    policies: [],
    identities: [],
    model_profile: null,
    recipients: [],
    // what a control plane of 0.2.0 or later says of a bundle asked with conditions=1
    features: ["conditions"],
    ...over,
  };
}

/** A registered tool without required capabilities. */
export function bundleTool(name: string, access: ToolAccess = "read"): BundleTool {
  return { name, access, required_capabilities: [] };
}

/** The front-end user `fe-<name>`, linked to the service user `usr_<name>` (`<name>@example.com`). */
export function bundleIdentity(name: string, groups: string[] = [], over: Partial<BundleIdentity> = {}): BundleIdentity {
  return { remote_user_id: `fe-${name}`, user_id: `usr_${name}`, email: `${name}@example.com`, groups, ...over };
}
