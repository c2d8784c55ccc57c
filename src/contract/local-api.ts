// The proxy daemon's local API on the unix socket (ARCHITECTURE.md "Proxy daemon, local API").
// The Python package svc_chatui (pipe, guard, governor) is its client; these schemas are the
// reference its tests check against. Every route but /readyz needs the runtime bearer token.
import { type Static, Type } from "@sinclair/typebox";

/**
 * Headers the Pipe sets on /v1/models and /v1/chat/completions to name the front-end user.
 * Email and name are percent-encoded (encodeURIComponent) when they are not plain ASCII.
 */
export const USER_HEADERS = {
  id: "x-svc-user-id",
  email: "x-svc-user-email",
  name: "x-svc-user-name",
} as const;

export const FrontendUser = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 200 }),
  email: Type.Optional(Type.String({ maxLength: 320 })),
  name: Type.Optional(Type.String({ maxLength: 200 })),
  role: Type.Optional(Type.String({ maxLength: 50 })),
});
export type FrontendUser = Static<typeof FrontendUser>;

export const DecideRequest = Type.Object(
  {
    tool: Type.String({ minLength: 1, maxLength: 200 }),
    /** null when the call has no session user: the record falls back to the installation subject. */
    user: Type.Union([FrontendUser, Type.Null()]),
    args: Type.Record(Type.String(), Type.Unknown()),
    /** Content passed along with the call (code body, script, prompt text); encrypted like args. */
    payload: Type.Optional(Type.Union([Type.String(), Type.Null()])),
    chat_id: Type.Optional(Type.String()),
    message_id: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
export type DecideRequest = Static<typeof DecideRequest>;

export const DecideResponse = Type.Union([
  Type.Object({ decision: Type.Literal("permit"), record_id: Type.String() }),
  Type.Object({
    decision: Type.Literal("deny"),
    record_id: Type.String(),
    /** tool_not_registered | svc.denied | identity.unlinked */
    code: Type.String(),
    /** The refusal text shown to the model/user, e.g. "Refused (svc.denied): …". */
    message: Type.String(),
    /** Only with identity.unlinked: a one-time claim link for that user alone (never into chat). */
    claim_url: Type.Optional(Type.String()),
  }),
]);
export type DecideResponse = Static<typeof DecideResponse>;

export const OutcomeRequest = Type.Object(
  {
    record_id: Type.String(),
    outcome: Type.Union([Type.Literal("ok"), Type.Literal("error")]),
    exit_code: Type.Optional(Type.Integer()),
  },
  { additionalProperties: false },
);
export type OutcomeRequest = Static<typeof OutcomeRequest>;

/** One assigned MCP server as the proxy sees it (issue 13): reachable with its tool count, or why not. */
export const ToolServerStatus = Type.Object({
  name: Type.String(),
  state: Type.Union([Type.Literal("ok"), Type.Literal("unreachable")]),
  error: Type.Union([Type.String(), Type.Null()]),
  tool_count: Type.Integer({ minimum: 0 }),
});
export type ToolServerStatus = Static<typeof ToolServerStatus>;
/** The audit spool's disk space (src/proxy/audit/spool-space.ts): `full` refuses decisions with 503 spool_full. */
export const SpoolStatus = Type.Object({
  state: Type.Union([Type.Literal("ok"), Type.Literal("low"), Type.Literal("full")]),
  path: Type.String(),
  /** Bytes the proxy may still write on the spool's filesystem; null when unknown. */
  free_bytes: Type.Union([Type.Integer(), Type.Null()]),
  /** Below this many free bytes the state is `low` (SVC_PROXY_AUDIT_LOW_SPACE). */
  low_space_bytes: Type.Integer(),
});
export type SpoolStatus = Static<typeof SpoolStatus>;

export const PolicyStatus = Type.Object({
  tool_count: Type.Integer(),
  state: Type.String(),
  /** Why the state is not "ready", for operators: on "stale", that decisions continue on the last good bundle. */
  reason: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  policy_revision: Type.Union([Type.Integer(), Type.Null()]),
  last_success: Type.Union([Type.String(), Type.Null()]),
  last_error: Type.Optional(Type.Union([Type.String(), Type.Null()])),
  bundle_version: Type.Optional(Type.Integer()),
  /** Audit records not yet acknowledged by the control plane; while `spool_indexing`, those indexed so far (a lower bound). */
  spool_depth: Type.Optional(Type.Integer()),
  /**
   * True while the proxy, after a start, still indexes the unshipped backlog of earlier runs
   * (it decides meanwhile): `spool_depth` then counts only what is indexed so far.
   */
  spool_indexing: Type.Optional(Type.Boolean()),
  /** The assigned MCP servers (absent when none is assigned). */
  tool_servers: Type.Optional(Type.Array(ToolServerStatus)),
  spool: Type.Optional(SpoolStatus),
});
export type PolicyStatus = Static<typeof PolicyStatus>;
