// The policy bundle the proxy polls (GET /api/v1/runtime/policy-bundle?version=1|2).
// v1: `model:invoke` permits decide model calls. v2: the agent's model-profile assignment
// decides them (a profile assigned = model calls permitted for linked users).
import { type Static, Type } from "@sinclair/typebox";
import { ToolAccess } from "./manifest.ts";

export const BUNDLE_VERSIONS = [1, 2] as const;

/** The bundle features (PolicyBundle.features) of this release; a proxy asks for conditions. */
export const BUNDLE_FEATURES = { conditions: "conditions" } as const;
export type BundleVersion = (typeof BUNDLE_VERSIONS)[number];

export const Effect = Type.Union([Type.Literal("permit"), Type.Literal("deny")]);
export type Effect = Static<typeof Effect>;

export const PolicyMode = Type.Union([Type.Literal("enforce"), Type.Literal("shadow")]);
export type PolicyMode = Static<typeof PolicyMode>;

export const BundlePolicy = Type.Object({
  id: Type.String(),
  name: Type.String(),
  src: Type.String({ description: "user:<id> | group:<name> | *" }),
  dst: Type.String({ description: "model:invoke | tool:<name>" }),
  effect: Effect,
  /**
   * A CEL condition over args, user and now (contract/conditions.ts); absent or null: always.
   * Served only to proxies that ask with `conditions=1`: for others the control plane drops
   * conditional permits and shadow policies and sends conditional denies without their condition.
   */
  condition: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  /** shadow: evaluated and recorded (audit `shadow`), never changes the outcome. Absent: enforce. */
  mode: Type.Optional(PolicyMode),
});
export type BundlePolicy = Static<typeof BundlePolicy>;

export const BundleTool = Type.Object({
  name: Type.String(),
  access: ToolAccess,
  required_capabilities: Type.Array(Type.String()),
  /** An MCP tool (issue 31): the server assigned to the agent that lists it, and its name there. Absent for a pack's tool. */
  server: Type.Optional(Type.String()),
  upstream: Type.Optional(Type.String()),
});
export type BundleTool = Static<typeof BundleTool>;

/** Front-end user id → service user, with the groups the user belongs to. */
export const BundleIdentity = Type.Object({
  remote_user_id: Type.String(),
  user_id: Type.String(),
  email: Type.String(),
  groups: Type.Array(Type.String()),
  /** Directory attributes of the service user (display_name, source, external_id when set), for conditions. */
  attributes: Type.Optional(Type.Record(Type.String(), Type.String())),
});
export type BundleIdentity = Static<typeof BundleIdentity>;

/**
 * A front-end user linked to a service user who is disabled (issue 27): the proxy refuses them
 * with `identity.disabled` and records their refusals under that service user. Kept apart from
 * `identities` on purpose: a proxy that does not know this field reads such a user as unlinked
 * (refused), never as linked.
 */
export const BundleDisabledIdentity = Type.Object({
  remote_user_id: Type.String(),
  user_id: Type.String(),
});
export type BundleDisabledIdentity = Static<typeof BundleDisabledIdentity>;

/** A model's price, per 1 million tokens, in the organization's currency (issue 16). */
export const ModelPrice = Type.Object({
  prompt: Type.Number({ minimum: 0, maximum: 1e9 }),
  completion: Type.Number({ minimum: 0, maximum: 1e9 }),
});
export type ModelPrice = Static<typeof ModelPrice>;

export const BundleModelProfile = Type.Object({
  id: Type.String(),
  display_name: Type.String(),
  endpoint: Type.String(),
  auth_type: Type.Union([Type.Literal("none"), Type.Literal("api_key")]),
  default_model: Type.String(),
  models: Type.Array(Type.String()),
  /** age ciphertext (base64 of the binary age file) of the API key, sealed to the runtimes' credential-sync keys. */
  api_key_sealed: Type.Union([Type.String(), Type.Null()]),
  /** Model name → price per 1M tokens; the proxy writes the cost of each call with it (absent before issue 16). */
  prices: Type.Optional(Type.Record(Type.String(), ModelPrice)),
});
export type BundleModelProfile = Static<typeof BundleModelProfile>;

export const BundleRecipient = Type.Object({
  key_id: Type.String(),
  recipient: Type.String(),
  kind: Type.Union([Type.Literal("customer"), Type.Literal("escrow")]),
});
export type BundleRecipient = Static<typeof BundleRecipient>;

/**
 * An MCP tool server assigned to the agent (issue 13). Its tools are governed as
 * `tool:<name>.<tool>`; the runtime lists them (`tools/list`) and registers them through the
 * tool sync like pack tools. Secrets (HTTP headers, stdio environment) exist only sealed to the
 * runtimes' credential-sync keys, exactly like a model profile's API key.
 */
export const BundleToolServer = Type.Object({
  id: Type.String(),
  /** The tool-name prefix: server `github` + tool `create_issue` → `github.create_issue`. */
  name: Type.String(),
  transport: Type.Union([Type.Literal("http"), Type.Literal("stdio")]),
  /** `http`: the Streamable HTTP endpoint (https, same URL rules as model endpoints). */
  url: Type.Union([Type.String(), Type.Null()]),
  /** `stdio`: the command installed in the image and its arguments. */
  command: Type.Union([Type.String(), Type.Null()]),
  args: Type.Array(Type.String()),
  /** age ciphertext (base64) of a JSON object {header: value} (http) or {VAR: value} (stdio), or null. */
  secrets_sealed: Type.Union([Type.String(), Type.Null()]),
  /** When set, only these upstream tool names are served. */
  allowed_tools: Type.Union([Type.Array(Type.String()), Type.Null()]),
  /** Admin overrides of the access derived from MCP annotations (readOnlyHint true → read). */
  access_overrides: Type.Record(Type.String(), ToolAccess),
  /** `oauth`: calls carry each user's own token, asked of the control plane per user (issue 32); absent: sealed secrets. */
  auth: Type.Optional(Type.Literal("oauth")),
  /**
   * `http` servers that asked for signed identity assertions (issue 32): the header each request
   * carries one in and the audience (`aud`) it is for. Absent or null: none.
   */
  assertion: Type.Optional(Type.Union([Type.Object({ header: Type.String(), audience: Type.String() }), Type.Null()])),
});
export type BundleToolServer = Static<typeof BundleToolServer>;

export const PolicyBundle = Type.Object({
  version: Type.Union([Type.Literal(1), Type.Literal(2)]),
  revision: Type.Integer({ description: "monotonic per organization; changes whenever anything in the bundle may change" }),
  generated_at: Type.String({ format: "date-time" }),
  organization_id: Type.String(),
  workspace_id: Type.String(),
  installation_id: Type.String(),
  agent_id: Type.String(),
  tools: Type.Array(BundleTool),
  policies: Type.Array(BundlePolicy),
  identities: Type.Array(BundleIdentity),
  /** Front-end users of disabled service users (absent from control planes before issue 27; never in `identities`). */
  disabled_identities: Type.Optional(Type.Array(BundleDisabledIdentity)),
  model_profile: Type.Union([BundleModelProfile, Type.Null()]),
  recipients: Type.Array(BundleRecipient),
  /** MCP tool servers assigned to the agent (absent from control planes before issue 13). */
  tool_servers: Type.Optional(Type.Array(BundleToolServer)),
  /**
   * What the control plane expressed in this bundle beyond the plain form (issue 29), so a
   * proxy can tell a bundle that honoured what it asked for from one an older control plane
   * made without it: `conditions` (conditions and shadow policies, asked with conditions=1).
   * Absent from control planes before 0.2.0.
   */
  features: Type.Optional(Type.Array(Type.String())),
  /**
   * The organization's current digest key id (issue 27): a proxy holding another fetches the new
   * key (GET digest-key) before it uses this bundle. Absent from control planes before rotation.
   */
  digest_key_id: Type.Optional(Type.String()),
  /**
   * The organization's current identity-assertion key id (issue 32), present when a server of
   * this bundle asks for assertions: a proxy holding another fetches it (GET assertion-key).
   */
  assertion_key_id: Type.Optional(Type.String()),
});
export type PolicyBundle = Static<typeof PolicyBundle>;
