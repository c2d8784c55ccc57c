// Admin routes for the organization's audit digest keys under /organizations/{org}: list and
// show (ids and times, never material), and rotate (POST to the collection makes a new current
// key). docs/digest-key.md says what a rotation buys.
import { Elysia } from "elysia";
import { DigestKey, DigestKeyList, DigestKeyRotation } from "../../contract/admin-api.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { getDigestKey, listDigestKeys, rotateDigestKey } from "./digest-keys.ts";

export function digestKeyRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "digest-key-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .get("/audit-digest-keys", async ({ principal }) => ({ keys: await listDigestKeys(deps.db, principal.orgId) }), {
      admin: true,
      response: DigestKeyList,
      detail: { summary: "List the audit digest keys, oldest first: ids and times, never material", tags: ["audit keys"] },
    })
    .post(
      "/audit-digest-keys",
      async ({ principal, set }) => {
        const rotation = await rotateDigestKey(deps, principal);
        set.status = 201;
        return rotation;
      },
      {
        admin: true,
        response: { 201: DigestKeyRotation },
        detail: { summary: "Rotate: a new digest key becomes current; runtimes switch to it within about one bundle poll", tags: ["audit keys"] },
      },
    )
    .get("/audit-digest-keys/:id", async ({ principal, params }) => getDigestKey(deps.db, principal.orgId, params.id), {
      admin: true,
      response: DigestKey,
      detail: { summary: "One audit digest key (never its material)", tags: ["audit keys"] },
    });
}
