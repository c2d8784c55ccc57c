// Identity-assertion keys (issue 32): the public JWKS (GET /assertion-keys/{org}/jwks.json, no
// credential: verifiers fetch it), the admin list and rotation under /organizations/{org}, and
// the runtime's GET assertion-key (the current key sealed to the calling replica).
import { Elysia, t } from "elysia";
import { AssertionJwks, AssertionKeyMaterial, JWKS_MAX_AGE_SECONDS } from "../../contract/identity-assertion.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { assertionKeyForReplica, listAssertionKeys, publishedJwks, rotateAssertionKey } from "./service.ts";

const KeyView = t.Object({
  id: t.String(),
  status: t.Union([t.Literal("current"), t.Literal("retired"), t.Literal("withdrawn"), t.Literal("expired")]),
  created_at: t.String(),
  retired_at: t.Union([t.String(), t.Null()]),
  published_until: t.Union([t.String(), t.Null()]),
});

export function assertionKeyRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "assertion-key-routes" })
    .use(authPlugin(deps))
    .get(
      "/assertion-keys/:org/jwks.json",
      async ({ params, set }) => {
        set.headers["cache-control"] = `public, max-age=${JWKS_MAX_AGE_SECONDS}`;
        return publishedJwks(deps, params.org);
      },
      {
        params: t.Object({ org: t.String({ maxLength: 64 }) }),
        response: AssertionJwks,
        detail: { summary: "The organization's identity-assertion public keys (JWKS, RFC 7517), unauthenticated and cacheable: what an MCP server verifies assertions with", tags: ["assertion keys"] },
      },
    )
    .get("/organizations/:org/assertion-keys", async ({ principal }) => ({ keys: await listAssertionKeys(deps, principal.orgId) }), {
      admin: true,
      response: t.Object({ keys: t.Array(KeyView) }),
      detail: { summary: "List the identity-assertion keys, oldest first: ids, status and times, never the private half", tags: ["assertion keys"] },
    })
    .post(
      "/organizations/:org/assertion-keys",
      async ({ principal, body, set }) => {
        const rotation = await rotateAssertionKey(deps, principal, { withdrawPrevious: body?.withdraw_previous === true });
        set.status = 201;
        return rotation;
      },
      {
        admin: true,
        body: t.Optional(
          t.Object({
            withdraw_previous: t.Optional(t.Boolean({ description: "take the previous key out of the JWKS at once (a key thought exposed); otherwise it stays until what it signed has expired" })),
          }),
        ),
        response: { 201: t.Object({ key: KeyView, retired: t.Union([KeyView, t.Null()]) }) },
        detail: { summary: "Rotate: a new signing key becomes current; runtimes switch at their next bundle poll", tags: ["assertion keys"] },
      },
    )
    .get("/runtime/assertion-key", async ({ runtime }) => assertionKeyForReplica(deps, runtime, runtime.replicaId), {
      runtime: true,
      response: AssertionKeyMaterial,
      detail: { summary: "The organization's current identity-assertion key, its private half sealed with age to the calling replica's credential-sync recipient", tags: ["runtime"] },
    });
}
