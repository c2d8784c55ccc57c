// Admin routes for customer audit-encryption keys under /organizations/{org}. The disable
// action is `POST …/audit-encryption-keys/{id}:disable`; Elysia reads `:` as a parameter
// marker, so the POST takes the whole last segment and splits off the action itself.
import { Elysia, t } from "elysia";
import { AuditKey, AuditKeyList } from "../../contract/admin-api.ts";
import { SvcError } from "../../contract/errors.ts";
import { acting } from "../audit/admin-events.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { escrowKeySummary } from "../escrow/identity.ts";
import { createKey, disableKey, escrowKeyView, getKey, keyView, listKeys } from "./service.ts";

const CreateKey = t.Object({ name: t.String({ minLength: 1, maxLength: 200 }), public_key: t.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false });

/**
 * `key_…:disable` → ["key_…", "disable"]. The router has already percent-decoded the segment
 * (decoding it again turned a `%25` into a lone `%` and a 500), and gives no string at all when
 * the segment's escapes are malformed: both are a 404 here, never an error.
 */
export function parseKeyAction(segment: unknown): { id: string; action: string } {
  if (typeof segment !== "string") throw new SvcError("not_found", "no such audit-encryption key; the path is POST …/audit-encryption-keys/{id}:disable");
  const i = segment.lastIndexOf(":");
  if (i <= 0) throw new SvcError("not_found", `no route POST …/audit-encryption-keys/${segment}; did you mean …/${segment}:disable?`);
  return { id: segment.slice(0, i), action: segment.slice(i + 1) };
}

export function auditKeyRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "audit-keys-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .get(
      "/audit-encryption-keys",
      async ({ principal }) => {
        const escrow = await escrowKeySummary(deps.db, principal.orgId);
        return { keys: [...(await listKeys(deps.db, principal.orgId)).map(keyView), ...(escrow ? [escrowKeyView(escrow)] : [])] };
      },
      {
        admin: true,
        response: AuditKeyList,
        detail: { summary: "List audit-encryption keys (active and disabled), and the escrow key (kind escrow) once escrow was enabled", tags: ["audit keys"] },
      },
    )
    .post(
      "/audit-encryption-keys",
      async ({ principal, body, set }) => {
        const row = await createKey(deps, principal.orgId, { name: body.name, publicKey: body.public_key }, acting(deps, principal));
        set.status = 201;
        return keyView(row);
      },
      {
        admin: true,
        body: CreateKey,
        response: { 201: AuditKey },
        detail: { summary: "Register a customer audit-encryption key (an age X25519 recipient)", tags: ["audit keys"] },
      },
    )
    .get(
      "/audit-encryption-keys/:id",
      async ({ principal, params }) => {
        const escrow = await escrowKeySummary(deps.db, principal.orgId);
        if (escrow && escrow.id === params.id) return escrowKeyView(escrow);
        return keyView(await getKey(deps.db, principal.orgId, params.id));
      },
      {
        admin: true,
        response: AuditKey,
        detail: { summary: "One audit-encryption key (the escrow key too, kind escrow)", tags: ["audit keys"] },
      },
    )
    .post(
      "/audit-encryption-keys/:keyAction",
      async ({ principal, params }) => {
        // Typed as a string, but null when the segment's escapes are malformed (see parseKeyAction).
        const { id, action } = parseKeyAction(params.keyAction);
        if (action !== "disable") throw new SvcError("not_found", `unknown key action "${action}"; the only action is :disable`);
        const escrow = await escrowKeySummary(deps.db, principal.orgId);
        if (escrow && escrow.id === id) {
          throw new SvcError(
            "escrow_key_not_disableable",
            `${id} is the escrow key: it is switched with escrow in the organization settings (PATCH …/settings with {"escrow_enabled": false}, or the console's Settings page), never disabled as a key`,
          );
        }
        return keyView(await disableKey(deps, principal.orgId, id, acting(deps, principal)));
      },
      {
        admin: true,
        response: AuditKey,
        detail: { summary: "Disable a customer key for good (POST …/{id}:disable); the escrow key answers 409 escrow_key_not_disableable (switch escrow off in the settings)", tags: ["audit keys"] },
      },
    );
}
