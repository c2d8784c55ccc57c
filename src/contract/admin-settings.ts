// Admin answers about the organization's settings, model profiles, readiness, SIEM sinks and
// directory sync (`svc settings|models|audit sinks|directory-sync …`, the console's settings,
// model profiles and SIEM sinks pages). See admin-api.ts.
import { type Static, Type } from "@sinclair/typebox";
import { Nullable, Time, listOf, open } from "./admin-shape.ts";

const Str = Type.String();

/** GET/PATCH …/settings. */
export const Settings = open({
  escrow_enabled: Type.Boolean(),
  /** Audit records older than this many days are deleted; null keeps them. */
  audit_retention_days: Nullable(Type.Integer()),
  /** The service's escrow recipient (age1…), once generated; null before escrow was first enabled. */
  escrow_recipient: Nullable(Str),
  /** True when new records are actually encrypted to the escrow recipient: enabled and ≥1 active customer key. */
  escrow_active: Type.Boolean(),
});
export type Settings = Static<typeof Settings>;

/** A model profile (…/model-profiles): whether a key is held and to whom it is sealed, never the key. */
export const ModelProfile = open({
  id: Str,
  display_name: Str,
  endpoint: Str,
  auth_type: Type.Union([Type.Literal("none"), Type.Literal("api_key")]),
  default_model: Str,
  models: Type.Array(Str),
  workspace_id: Str,
  has_api_key: Type.Boolean(),
  /** The replicas the key is sealed to. */
  sealed_to: Type.Array(Str),
  /** Model name → price per 1M tokens. */
  prices: Type.Record(Str, open({ prompt: Type.Number(), completion: Type.Number() })),
  created_at: Time,
});
export type ModelProfile = Static<typeof ModelProfile>;
export const ModelProfileList = listOf("model_profiles", ModelProfile);
export const ModelProfileAssigned = open({ agent_id: Str, profile_id: Str });
export const ModelProfileAssignment = open({ agent_id: Str, profile: Nullable(ModelProfile) });

/** Whether runtimes can use a model profile or a tool server now, check by check. */
export const ReadinessCheck = open({ name: Str, ok: Type.Boolean(), detail: Str });
export const Readiness = open({ ready: Type.Boolean(), checks: Type.Array(ReadinessCheck) });
export type Readiness = Static<typeof Readiness>;

const SinkHealth = open({
  status: Type.Union([Type.Literal("ok"), Type.Literal("pending"), Type.Literal("failing")]),
  delivered: Type.Integer(),
  last_success_at: Nullable(Time),
  last_error_at: Nullable(Time),
  last_error: Nullable(Str),
  failures: Type.Integer(),
  next_attempt_at: Nullable(Time),
  lag_records: Type.Integer(),
  /** True when the backlog is larger than the count stops at. */
  lag_records_capped: Type.Boolean(),
  lag_seconds: Type.Integer(),
  /** Where delivery stands: the store and admin chains' numbers (null while rows stored before the chains are still being sent, by receipt time). */
  cursor: open({ received_at: Nullable(Time), id: Nullable(Str), store_seq: Type.Optional(Nullable(Type.Integer())), admin_seq: Type.Optional(Nullable(Type.Integer())) }),
});

/** A SIEM sink (…/siem-sinks): no secret, only whether one is set; its health and lag. */
export const Sink = open({
  id: Str,
  name: Str,
  kind: Type.Union([Type.Literal("webhook"), Type.Literal("syslog"), Type.Literal("otlp")]),
  endpoint: Str,
  include_ciphertext: Type.Boolean(),
  /** What each event is (issue 35): svc's record as stored, an OCSF event or an ECS document. */
  format: Type.Union([Type.Literal("svc"), Type.Literal("ocsf"), Type.Literal("ecs")]),
  enabled: Type.Boolean(),
  secret_set: Type.Boolean(),
  ca_pem_set: Type.Boolean(),
  server_name: Nullable(Str),
  created_at: Time,
  health: SinkHealth,
});
export type Sink = Static<typeof Sink>;
export const SinkList = listOf("sinks", Sink);

/** Directory sync's configuration (…/directory-sync): never the client secret. */
export const DirectorySyncConfig = open({
  tenant_id: Str,
  client_id: Str,
  app_id: Str,
  dry_run: Type.Boolean(),
  create_users: Type.Boolean(),
  authority_url: Str,
  graph_url: Str,
  interval_seconds: Type.Integer(),
  enabled: Type.Boolean(),
  has_client_secret: Type.Boolean(),
  updated_at: Time,
});
export type DirectorySyncConfig = Static<typeof DirectorySyncConfig>;

const change = <K extends string, P extends Parameters<typeof open>[0]>(kind: K, props: P) => open({ kind: Type.Literal(kind), ...props });
/** One change a directory sync run made (or, dry, would make). */
export const DirectorySyncChange = Type.Union([
  change("create_group", { group: Str }),
  change("create_user", { email: Str, display_name: Nullable(Str), external_id: Str }),
  change("enable_user", { email: Str, user_id: Str }),
  change("disable_user", { email: Str, user_id: Str }),
  change("add_member", { group: Str, email: Str, user_id: Nullable(Str) }),
  change("remove_member", { group: Str, email: Str, user_id: Str }),
  change("skip_user", { email: Nullable(Str), external_id: Str, reason: Str }),
]);
export type DirectorySyncChange = Static<typeof DirectorySyncChange>;

/** A directory sync run's report (…/directory-sync/run, …/report). */
export const DirectorySyncReport = open({
  id: Str,
  started_at: Time,
  finished_at: Nullable(Time),
  dry_run: Type.Boolean(),
  status: Type.Union([Type.Literal("running"), Type.Literal("succeeded"), Type.Literal("failed")]),
  counts: Type.Record(Str, Type.Integer()),
  changes: Type.Array(DirectorySyncChange),
  errors: Type.Array(Str),
});
export type DirectorySyncReport = Static<typeof DirectorySyncReport>;

/** An MCP tool server (…/tool-servers): the names of its secrets and to whom they are sealed, never the ciphertext. */
export const ToolServer = open({
  id: Str,
  name: Str,
  workspace_id: Str,
  transport: Type.Union([Type.Literal("http"), Type.Literal("stdio")]),
  url: Nullable(Str),
  command: Nullable(Str),
  args: Type.Array(Str),
  has_secrets: Type.Boolean(),
  secret_names: Type.Array(Str),
  sealed_to: Type.Array(Str),
  /** null: every tool the server lists. */
  allowed_tools: Nullable(Type.Array(Str)),
  access_overrides: Type.Record(Str, Type.Union([Type.Literal("read"), Type.Literal("write")])),
  /** `secrets`: sealed headers or environment (or none); `oauth`: each user's own OAuth token (issue 32). Absent before issue 32. */
  auth: Type.Optional(Type.Union([Type.Literal("secrets"), Type.Literal("oauth")])),
  /** oauth: the client svc uses at the server's authorization server (admin-registered or dynamic), never its secret. */
  oauth: Type.Optional(
    Nullable(open({ registration: Nullable(Type.Union([Type.Literal("admin"), Type.Literal("dynamic")])), client_id: Nullable(Str), issuer: Nullable(Str), resource: Nullable(Str) })),
  ),
  /** http: the header each request carries a signed identity assertion in (issue 32), and the audience it is for; absent or null: none. */
  assertion: Type.Optional(Nullable(open({ header: Str, audience: Str }))),
  created_at: Time,
});
export type ToolServer = Static<typeof ToolServer>;
/** A user's OAuth grant for a tool server (issue 32): who, where, until when; never a token. user_id null: the listing grant. */
export const ToolServerGrant = open({
  id: Str,
  server_id: Str,
  server: Str,
  user_id: Nullable(Str),
  subject: Nullable(Str),
  expires_at: Nullable(Time),
  refreshable: Type.Boolean(),
  granted_at: Time,
  refreshed_at: Nullable(Time),
});
export const ToolServerGrantList = listOf("grants", ToolServerGrant);
export type ToolServerGrantList = Static<typeof ToolServerGrantList>;
/** A consent link an admin asked for (the listing grant). */
export const ToolServerConsentLink = open({ url: Str, expires_at: Time });
export const ToolServerList = listOf("tool_servers", ToolServer);
/**
 * A tool the runtimes listed from the server (issue 31): its governed name (policies say
 * `tool:<name>`), its name at the server, the access it is served with, and whether it is
 * served (else why: outside allowed_tools, or a name svc cannot serve), with the installations that listed it.
 */
export const ToolServerTool = open({
  name: Str,
  upstream: Str,
  access: Type.Union([Type.Literal("read"), Type.Literal("write")]),
  served: Type.Boolean(),
  why: Nullable(Str),
  installations: Type.Array(Str),
});
/** A tool server with the agents it is assigned to (show, create and every change); show adds the tools its runtimes listed. */
export const ToolServerDetail = Type.Composite([ToolServer, open({ assigned_agents: Type.Array(Str), tools: Type.Optional(Type.Array(ToolServerTool)) })], { additionalProperties: true });
export type ToolServerDetail = Static<typeof ToolServerDetail>;
export const ToolServerAssignment = open({ agent_id: Str, server_id: Str, assigned: Type.Boolean() });
export const AgentToolServers = open({ agent_id: Str, tool_servers: Type.Array(ToolServer) });

/** Each live replica's report of a tool server. */
export const ToolServerRuntime = open({
  replica_id: Str,
  installation_id: Str,
  state: Type.Union([Type.Literal("ok"), Type.Literal("unreachable"), Type.Literal("not_reported")]),
  error: Nullable(Str),
  tool_count: Nullable(Type.Integer()),
  last_heartbeat_at: Nullable(Time),
});
/** A tool a runtime listed and does not serve, with why (issue 31). */
export const ToolServerSkippedTool = open({ tool: Str, why: Str, installation_id: Str });
export const ToolServerReadiness = Type.Composite([Readiness, open({ runtimes: Type.Array(ToolServerRuntime), skipped_tools: Type.Optional(Type.Array(ToolServerSkippedTool)) })], {
  additionalProperties: true,
});
export type ToolServerReadiness = Static<typeof ToolServerReadiness>;

export const Deleted = open({ deleted: Str, name: Str });

/** A live runtime's credential-sync key, to seal an API key or tool-server secrets to (…/runtime-recipients). */
export const RuntimeRecipient = open({ replica_id: Str, installation_id: Str, recipient: Str });
export type RuntimeRecipient = Static<typeof RuntimeRecipient>;
export const RuntimeRecipientList = listOf("recipients", RuntimeRecipient);

/** A tool an installation serves (…/installations/{id}/tools): a pack's, or an MCP tool with its server and its name there (issue 31). */
export const InstalledTool = open({
  name: Str,
  access: Type.Union([Type.Literal("read"), Type.Literal("write")]),
  required_capabilities: Type.Array(Str),
  server: Type.Optional(Str),
  upstream: Type.Optional(Str),
});
export type InstalledTool = Static<typeof InstalledTool>;
export const InstalledToolList = listOf("tools", InstalledTool);
