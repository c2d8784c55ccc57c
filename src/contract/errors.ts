// The stable machine codes of every refusal svc gives, shared by the control plane (HTTP
// problem+json), the proxy (local API and refusals seen by the model) and the CLI (which
// prints the code). Codes never change meaning once released; add new ones instead.
import { type Static, Type } from "@sinclair/typebox";

export const ERROR_CODES = {
  // generic
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  validation_failed: 422,
  conflict: 409,
  rate_limited: 429,
  internal: 500,
  store_unavailable: 503,
  /** The database had too much at once (a lock, a conflict that kept coming back): send again after Retry-After. */
  store_busy: 503,
  // resources
  invalid_platform: 422,
  endpoint_not_https: 422,
  endpoint_has_credentials: 422,
  endpoint_has_query: 422,
  endpoint_has_fragment: 422,
  invalid_endpoint: 422,
  invalid_pattern: 422,
  invalid_condition: 422,
  condition_too_costly: 422,
  unregistered_tool: 422,
  invalid_recipient: 422,
  key_disabled: 409,
  escrow_requires_key: 409,
  /** The escrow key is switched with escrow in the organization settings, never disabled as a key. */
  escrow_key_not_disableable: 409,
  // escrow recovery (break-glass)
  recovery_self_approval: 403,
  // the two-person rule between people (issue 27; docs/audit.md "Escrow recovery")
  recovery_approver_provenance: 403,
  recovery_same_idp_subject: 403,
  recovery_approver_too_new: 403,
  recovery_idp_identity_too_new: 403,
  recovery_stale_sign_in: 403,
  recovery_not_approved: 409,
  recovery_consumed: 410,
  record_not_escrowed: 409,
  tool_conflict: 409,
  credential_already_issued: 409,
  /** A runtime token of a deleted installation: no rotation brings it back (a new installation does). */
  installation_deleted: 401,
  no_runtime_recipient: 409,
  workspace_not_found: 404,
  agent_not_found: 404,
  claim_expired: 410,
  claim_used: 410,
  invite_expired: 410,
  invite_used: 410,
  identity_already_linked: 409,
  identity_other_installation: 409,
  authorization_pending: 428,
  login_expired: 410,
  directory_sync_not_configured: 409,
  outbound_url_refused: 422,
  // requests refused before routing (control plane's request gate)
  method_not_allowed: 405,
  body_too_large: 413,
  body_too_deep: 400,
  unsupported_media_type: 415,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Refusal codes the proxy gives for a governed call (spec §7). */
export const REFUSAL_CODES = {
  toolNotRegistered: "tool_not_registered",
  denied: "svc.denied",
  unlinked: "identity.unlinked",
  /** The front-end user is linked to a service user who is disabled (issue 27). */
  disabled: "identity.disabled",
  /** A model call over a budget of the user, one of their groups or the agent (issue 16). */
  budgetExceeded: "svc.budget_exceeded",
  /** A call over a requests-per-minute limit (issue 16). */
  rateLimited: "svc.rate_limited",
  /** A call to an OAuth tool server by a user who has not consented there yet, or whose consent was revoked (issue 32). */
  consentRequired: "identity.consent_required",
} as const;
export type RefusalCode = (typeof REFUSAL_CODES)[keyof typeof REFUSAL_CODES];

/** RFC 9457 problem details with svc's `code` extension. */
export const Problem = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    code: Type.String(),
    instance: Type.Optional(Type.String()),
    errors: Type.Optional(Type.Array(Type.Object({ path: Type.String(), message: Type.String() }))),
  },
  { additionalProperties: true },
);
export type Problem = Static<typeof Problem>;

export const PROBLEM_CONTENT_TYPE = "application/problem+json";

export function problemType(code: string): string {
  return `urn:svc:problem:${code}`;
}

/** An error with a stable code; HTTP layers map it to problem+json, the CLI to an exit code. */
export class SvcError extends Error {
  override name = "SvcError";
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
    this.status = ERROR_CODES[code];
  }

  toProblem(instance?: string): Problem {
    return {
      type: problemType(this.code),
      title: this.code.replace(/_/g, " "),
      status: this.status,
      detail: this.message,
      code: this.code,
      ...(instance ? { instance } : {}),
      ...this.extra,
    };
  }
}
