// Escrow recovery routes under /organizations/{org}/audit-recovery-requests (break-glass,
// service.ts): an owner requests, another owner or admin approves, the requester fetches the
// plaintext once. The fetch answers the decrypted bytes with no-store; nothing is logged.
import { RecoveryRequest, RecoveryRequestList } from "../../contract/admin-api.ts";
import { Elysia, t } from "elysia";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { REASON_MAX, approveRequest, createRequest, fetchPlaintext, getRequest, listRequests } from "./service.ts";

const Create = t.Object(
  { record_id: t.String({ minLength: 1, maxLength: 64 }), reason: t.String({ minLength: 1, maxLength: REASON_MAX }) },
  { additionalProperties: false },
);
const Params = t.Object({ org: t.String(), id: t.String({ minLength: 1, maxLength: 64 }) });
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
      detail: { summary: "Approve another owner's request (never your own: 403 recovery_self_approval); audited", tags: ["audit recovery"] },
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
