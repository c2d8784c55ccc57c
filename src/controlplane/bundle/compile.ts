// Policy-bundle compilation, the pure core: plain inputs in, the PolicyBundle the proxy polls
// out. No clock, database or network here; the loader (load.ts) gathers the inputs.
import type { BundleDisabledIdentity, BundleIdentity, BundleModelProfile, BundlePolicy, BundleRecipient, BundleTool, BundleToolServer, BundleVersion, PolicyBundle } from "../../contract/bundle.ts";
import { BUNDLE_FEATURES, BUNDLE_VERSIONS } from "../../contract/bundle.ts";
import { POLICY_FEATURES, policyNeeds } from "../replicas/features.ts";

export type BundleInputs = {
  version: BundleVersion;
  revision: number;
  generatedAt: number;
  organizationId: string;
  workspaceId: string;
  installationId: string;
  agentId: string;
  tools: BundleTool[];
  /** The MCP tools of the agent's servers (issue 31, tool-servers/catalogue.ts); a pack's tool of the same name wins. */
  mcpTools?: BundleTool[];
  policies: (BundlePolicy & { requires?: readonly string[] })[];
  identities: BundleIdentity[];
  /** Front-end users of disabled service users: served apart from `identities`, never in it. */
  disabledIdentities?: BundleDisabledIdentity[];
  modelProfile: BundleModelProfile | null;
  recipients: BundleRecipient[];
  /** MCP tool servers assigned to the agent (issue 13); absent = none. */
  toolServers?: BundleToolServer[];
  /** The organization's current digest key id (a proxy holding another fetches it); null: none. */
  digestKeyId?: string | null;
  /** The organization's current identity-assertion key id, when a server asks for assertions (issue 32). */
  assertionKeyId?: string | null;
  /** The proxy asked with `conditions=1`: it evaluates conditions and shadow policies. */
  conditions: boolean;
  /** With `conditions`: the policy features every live replica can express (default: all of this release's). */
  expressible?: ReadonlySet<string>;
};

/** The bundle version asked for in `?version=`; null when it is not one svc serves. Absent means 1. */
export function parseBundleVersion(raw: string | undefined): BundleVersion | null {
  if (raw === undefined || raw === "") return 1;
  const n = Number(raw);
  return (BUNDLE_VERSIONS as readonly number[]).includes(n) && String(n) === raw.trim() ? (n as BundleVersion) : null;
}

/**
 * The weak ETag of a bundle: the organization revision, the version (v1 and v2 differ), `c`
 * with conditions, and the digest of the body (bundleDigest). The digest makes the ETag cover
 * everything in the body (issue 29): two control-plane releases that compile one revision
 * differently (a rolling upgrade) never answer each other's ETag with a 304.
 */
export function bundleEtag(revision: number, version: BundleVersion, conditions: boolean, digest: string): string {
  return `W/"${revision}-v${version}${conditions ? "c" : ""}-${digest}"`;
}

/** The first 16 hex digits of the SHA-256 of the bundle's JSON without `generated_at` (the only field that changes between two compilations of the same state). */
export function bundleDigest(bundle: PolicyBundle): string {
  const { generated_at: _, ...content } = bundle;
  return Bun.SHA256.hash(JSON.stringify(content), "hex").slice(0, 16);
}

/**
 * The policies as a proxy sees them. `expressible`: the policy features this bundle may carry
 * (empty for a proxy that did not ask for conditions; for one that did, what every live
 * control-plane replica can express, replicas/features.ts). A policy needing a feature outside
 * it gets its narrower form, which can only refuse more: a permit or a shadow policy is left
 * out, a deny is sent unconditional and enforced. A proxy that evaluates conditions gets the
 * rest whole.
 */
export function policiesFor(policies: readonly (BundlePolicy & { requires?: readonly string[] })[], expressible: ReadonlySet<string>): BundlePolicy[] {
  const out: BundlePolicy[] = [];
  for (const p of policies) {
    const base = { id: p.id, name: p.name, src: p.src, dst: p.dst, effect: p.effect };
    const shadow = p.mode === "shadow";
    if (policyNeeds(p).every((f) => expressible.has(f))) out.push({ ...base, ...(p.condition ? { condition: p.condition } : {}), ...(shadow ? { mode: "shadow" as const } : {}) });
    else if (!shadow && p.effect === "deny") out.push(base);
  }
  return out.sort(byKey((p) => p.id));
}

/**
 * The tools of a bundle: the installation's pack tools, then the agent's MCP tools whose names
 * no pack tool holds (a pack's tool of the same name wins: keep pack prefixes apart from server names).
 */
export function bundleTools(packs: readonly BundleTool[], mcp: readonly BundleTool[]): BundleTool[] {
  const names = new Set(packs.map((t) => t.name));
  const out: BundleTool[] = packs.map((t) => ({ name: t.name, access: t.access, required_capabilities: [...t.required_capabilities] }));
  for (const t of mcp) if (!names.has(t.name)) out.push({ name: t.name, access: t.access, required_capabilities: [], server: t.server!, upstream: t.upstream! });
  return out.sort(byName);
}

/**
 * `tool:<prefix>.*` policies (every tool of an MCP server) as the proxy reads them: one policy
 * per registered tool of that prefix, under the same id and name. Every proxy, whatever its
 * release, then reads exact names only, and a deny on a prefix is never skipped by a proxy that
 * would not parse it. A prefix with no registered tool expands to nothing (it decides nothing yet).
 */
export function expandPrefixes(policies: readonly BundlePolicy[], tools: readonly BundleTool[]): BundlePolicy[] {
  const out: BundlePolicy[] = [];
  for (const p of policies) {
    const prefix = /^tool:([A-Za-z][A-Za-z0-9_-]*)\.\*$/.exec(p.dst)?.[1];
    if (prefix === undefined) out.push(p);
    else for (const t of tools) if (t.name.startsWith(`${prefix}.`)) out.push({ ...p, dst: `tool:${t.name}` });
  }
  return out;
}

/** True when an If-None-Match header names this ETag (weak comparison, lists and `*` allowed). */
export function etagMatches(ifNoneMatch: string | undefined | null, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch === etag) return true; // what a proxy sends back: the ETag as it got it
  const opaque = (tag: string) => tag.trim().replace(/^W\//, "");
  const want = opaque(etag);
  return ifNoneMatch.split(",").some((t) => t.trim() === "*" || opaque(t) === want);
}

/**
 * The disabled users' front-end identities, sorted. One that `identities` also lists (a race
 * that cannot happen in one read, guarded anyway) is left out here: listed as linked, it is
 * decided as the linked user it is for every proxy alike.
 */
function disabledApart(enabled: readonly BundleIdentity[], disabled: readonly BundleDisabledIdentity[]): BundleDisabledIdentity[] {
  const linked = new Set(enabled.map((i) => i.remote_user_id));
  return disabled
    .filter((d) => !linked.has(d.remote_user_id))
    .map((d) => ({ remote_user_id: d.remote_user_id, user_id: d.user_id }))
    .sort(byKey((d) => d.remote_user_id));
}

const byName = <T extends { name: string }>(a: T, b: T) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
const byKey =
  <T>(key: (x: T) => string) =>
  (a: T, b: T) =>
    key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;

/**
 * Builds the bundle. Lists are sorted so that equal inputs give byte-equal bundles (apart
 * from generated_at). v1 and v2 carry the same data: v1 proxies decide model calls by
 * `model:invoke` permits, v2 proxies by the model-profile assignment, which both carry.
 */
export function compileBundle(input: BundleInputs): PolicyBundle {
  const tools = bundleTools(input.tools, input.mcpTools ?? []);
  return {
    version: input.version,
    revision: input.revision,
    generated_at: new Date(input.generatedAt).toISOString(),
    organization_id: input.organizationId,
    workspace_id: input.workspaceId,
    installation_id: input.installationId,
    agent_id: input.agentId,
    tools,
    policies: expandPrefixes(policiesFor(input.policies, input.conditions ? (input.expressible ?? new Set(POLICY_FEATURES)) : new Set()), tools),
    identities: input.identities
      .map((i) => ({ remote_user_id: i.remote_user_id, user_id: i.user_id, email: i.email, groups: [...i.groups].sort(), ...(i.attributes ? { attributes: { ...i.attributes } } : {}) }))
      .sort(byKey((i) => i.remote_user_id)),
    disabled_identities: disabledApart(input.identities, input.disabledIdentities ?? []),
    model_profile: input.modelProfile ? { ...input.modelProfile, models: [...input.modelProfile.models] } : null,
    recipients: input.recipients.map((r) => ({ key_id: r.key_id, recipient: r.recipient, kind: r.kind })),
    tool_servers: (input.toolServers ?? [])
      .map((s) => ({ ...s, args: [...s.args], allowed_tools: s.allowed_tools ? [...s.allowed_tools] : null, access_overrides: { ...s.access_overrides } }))
      .sort(byName),
    ...(input.conditions ? { features: [BUNDLE_FEATURES.conditions] } : {}),
    ...(input.digestKeyId ? { digest_key_id: input.digestKeyId } : {}),
    ...(input.assertionKeyId ? { assertion_key_id: input.assertionKeyId } : {}),
  };
}
