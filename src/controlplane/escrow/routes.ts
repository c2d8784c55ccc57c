// Escrow recovery routes under /organizations/{org}/audit-recovery-requests (break-glass,
// service.ts): an owner requests, another person approves (approval.ts), the requester fetches
// the plaintext once. The fetch answers the decrypted bytes with no-store; nothing is logged.
// …/audit-recovery-policy is the approvers' minimum membership age (recovery-policy.ts).
import { Elysia, t } from "elysia";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { RecoveryPolicy, RecoveryRequest, RecoveryRequestList } from "../../contract/admin-api.ts";
import { approveRequest } from "./approval.ts";
import { MAX_APPROVER_MIN_AGE_HOURS, getPolicy, setPolicy } from "./recovery-policy.ts";
import { REASON_MAX, createRequest, fetchPlaintext, getRequest, listRequests } from "./service.ts";

const Create = t.Object({ record_id: t.String({ minLength: 1, maxLength: 64 }), reason: t.String({ minLength: 1, maxLength: REASON_MAX }) }, { additionalProperties: false });
const Params = t.Object({ org: t.String(), id: t.String({ minLength: 1, maxLength: 64 }) });
const PolicyUpdate = t.Object(
  { approver_min_age_hours: t.Integer({ minimum: 0, maximum: MAX_APPROVER_MIN_AGE_HOURS, description: "hours an approver must have been a member when the request was made" }) },
  { additionalProperties: false },
);
const ListQuery = t.Object({ status: t.Optional(t.Union([t.Literal("pending"), t.Literal("approved"), t.Literal("consumed")])) });

export function escrowRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "escrow-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .get("/audit-recovery-requests", async ({ principal, query }) => ({ requests: await listRequests(deps.db, principal.orgId, query.status ? { status: query.status } : {}) }), {
      admin: true,
      query: ListQuery,
      response: RecoveryRequestList,
      detail: { summary: "Escrow recovery (break-glass) requests, newest first", tags: ["audit recovery"] },
    })
    .post(
      "/audit-recovery-requests",
      async ({ principal, body, set }) => {
        const created = await createRequest(deps, principal, { recordId: body.record_id, reason: body.reason });
        set.status = 201;
        return created;
      },
      {
        admin: true,
        body: Create,
        response: { 201: RecoveryRequest },
        detail: { summary: "An owner asks to decrypt one audit record with the escrow identity, giving a reason (audited)", tags: ["audit recovery"] },
      },
    )
    .get("/audit-recovery-requests/:id", async ({ principal, params }) => getRequest(deps.db, principal.orgId, params.id), {
      admin: true,
      params: Params,
      response: RecoveryRequest,
      detail: { summary: "One recovery request", tags: ["audit recovery"] },
    })
    .post("/audit-recovery-requests/:id/approve", async ({ principal, params }) => approveRequest(deps, principal, params.id), {
      admin: true,
      params: Params,
      response: RecoveryRequest,
      detail: {
        summary:
          "Approve another person's request. 403 recovery_self_approval (your own), recovery_approver_provenance (the requester granted your membership or role), recovery_same_idp_subject (the identity provider knows you as the requester), recovery_approver_too_new (your membership was too young at request time), recovery_idp_identity_too_new (your single sign-on identity was too new at request time), recovery_stale_sign_in (no sign-in within 5 minutes); refusals are audited too",
        tags: ["audit recovery"],
      },
    })
    .get("/audit-recovery-policy", async ({ principal }) => getPolicy(deps.db, principal.orgId, deps.now()), {
      admin: true,
      response: RecoveryPolicy,
      detail: { summary: "The rule for recovery approvers: the minimum membership age at request time (default 24 hours) and the fresh sign-in", tags: ["audit recovery"] },
    })
    .put("/audit-recovery-policy", async ({ principal, body }) => setPolicy(deps, principal, body.approver_min_age_hours), {
      admin: true,
      body: PolicyUpdate,
      response: RecoveryPolicy,
      detail: { summary: "An owner sets the approvers' minimum membership age; a lowering holds only for requests made once the age it replaces has passed; audited", tags: ["audit recovery"] },
    })
    .post(
      "/audit-recovery-requests/:id/fetch",
      async ({ principal, params }) => {
        const { recordId, plaintext } = await fetchPlaintext(deps, principal, params.id);
        return new Response(new Uint8Array(plaintext), {
          headers: {
            "content-type": "application/octet-stream",
            "content-disposition": `attachment; filename="${recordId}.txt"`,
            "cache-control": "no-store",
            "x-svc-record-id": recordId,
          },
        });
      },
      {
        admin: true,
        params: Params,
        detail: {
          responses: { 200: { description: "the decrypted arguments (exactly as the caller sent them)", content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } } },
          summary: "The requester's one fetch of the decrypted arguments of an approved request (a second fetch: 410 recovery_consumed); audited",
          tags: ["audit recovery"],
        },
      },
    );
}
