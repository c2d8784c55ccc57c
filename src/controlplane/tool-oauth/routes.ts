// Per-user OAuth routes (issue 32). The runtime asks for a user's access token (sealed to the
// asking replica) or gets that user's consent link; admins list grants (never tokens), revoke
// them, and connect a server's listing grant (`svc tool-servers tokens …`). The browser's
// pages (consent link, callback) are the console's (console/pages/tool-consent.ts).
import { Encrypter } from "age-encryption";
import { Elysia, t } from "elysia";
import { ToolServerConsentLink, ToolServerGrantList } from "../../contract/admin-api.ts";
import { SvcError } from "../../contract/errors.ts";
import { ToolServerTokenRequest, ToolServerTokenResponse } from "../../contract/runtime-api.ts";
import { acting, recordChange } from "../audit/admin-events.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { findRemoteIdentity } from "../directory/service.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";
import { NO_CONTENT } from "../http/openapi-complete.ts";
import { resolveWorkspace } from "../organizations/service.ts";
import { replicasOf } from "../installations/replicas.ts";
import { assignedAgentIds, resolveServer } from "../tool-servers/service.ts";
import { accessToken, consentLink, listGrants, revokeGrant } from "./service.ts";

const tags = ["tool-servers"];
const GrantParams = t.Object({ org: t.String(), id: t.String({ minLength: 1, maxLength: 200 }), grant: t.String({ minLength: 1, maxLength: 64 }) });
const ServerParams = t.Object({ org: t.String(), id: t.String({ minLength: 1, maxLength: 200 }) });
const GrantQuery = t.Object({ workspace: t.Optional(t.String({ maxLength: 100 })), user_id: t.Optional(t.String({ maxLength: 64 })) });

/** The service user a front-end user of this installation is linked to; refused otherwise. */
async function userOf(deps: ControlPlaneDeps, caller: RuntimeCaller, remoteUserId: string): Promise<string> {
  const r = await findRemoteIdentity(deps.db, caller.orgId, remoteUserId);
  // A runtime token speaks for its installation's users only (as for claim links).
  if (!r?.userId || (r.installationId !== null && r.installationId !== caller.installationId)) {
    throw new SvcError("forbidden", `front-end user ${remoteUserId.slice(0, 200)} is not a linked user of this installation`);
  }
  return r.userId;
}

async function sealToReplica(deps: ControlPlaneDeps, caller: RuntimeCaller, text: string): Promise<string> {
  if (!caller.replicaId) throw new SvcError("validation_failed", "a token is sealed to the asking replica: send x-svc-replica (bootstrap first)");
  const replica = (await replicasOf(deps.db, caller.installationId)).find((r) => r.id === caller.replicaId);
  if (!replica) throw new SvcError("forbidden", `replica ${caller.replicaId.slice(0, 64)} is not a replica of this installation; bootstrap again`);
  const e = new Encrypter();
  e.addRecipient(replica.credentialSyncRecipient);
  return Buffer.from(await e.encrypt(text)).toString("base64");
}

export function toolOauthRoutes(deps: ControlPlaneDeps) {
  const db = deps.db;
  const serverOf = async (orgId: string, id: string, workspace?: string) => resolveServer(db, orgId, id, workspace ? (await resolveWorkspace(db, orgId, workspace)).id : undefined);
  const oauthServer = async (orgId: string, id: string, workspace?: string) => {
    const s = await serverOf(orgId, id, workspace);
    if (s.auth !== "oauth") throw new SvcError("conflict", `tool server "${s.name}" does not use OAuth (it was created with auth "${s.auth}")`);
    return s;
  };

  return new Elysia({ name: "tool-oauth-routes" })
    .use(authPlugin(deps))
    .post(
      "/runtime/tool-server-token",
      async ({ runtime, body }) => {
        const server = await resolveServer(db, runtime.orgId, body.server, runtime.workspaceId).catch(() => null);
        if (!server || server.auth !== "oauth" || !(await assignedAgentIds(db, server.id)).includes(runtime.agentId)) {
          throw new SvcError("not_found", `no OAuth tool server "${body.server.slice(0, 64)}" is assigned to this installation's agent`);
        }
        const userId = body.remote_user_id === undefined ? null : await userOf(deps, runtime, body.remote_user_id);
        const token = await accessToken(deps, server, userId, body.stale ?? false);
        if (!token) {
          if (userId === null) return { consent_required: true as const, consent_url: null, expires_at: null };
          const link = await consentLink(deps, server, userId);
          return { consent_required: true as const, consent_url: link.url, expires_at: new Date(link.expiresAt).toISOString() };
        }
        return { access_token_sealed: await sealToReplica(deps, runtime, token.accessToken), expires_at: new Date(token.expiresAt).toISOString(), subject: token.subject };
      },
      {
        runtime: true,
        body: ToolServerTokenRequest,
        response: ToolServerTokenResponse,
        detail: { tags: ["runtime"], summary: "A user's access token for an OAuth tool server, sealed to this replica; or that user's consent link" },
      },
    )
    .group("/organizations/:org", (app) =>
      app
        .get(
          "/tool-servers/:id/tokens",
          async ({ principal, params, query }) => ({
            grants: await listGrants(db, principal.orgId, { serverId: (await oauthServer(principal.orgId, params.id, query.workspace)).id, ...(query.user_id ? { userId: query.user_id } : {}) }),
          }),
          {
            admin: true,
            params: ServerParams,
            query: GrantQuery,
            response: ToolServerGrantList,
            detail: { tags, summary: "The users' OAuth grants for a tool server: subject, user, expiry (never a token)" },
          },
        )
        .delete(
          "/tool-servers/:id/tokens/:grant",
          async ({ principal, params, set }) => {
            await revokeGrant(deps, principal.orgId, await oauthServer(principal.orgId, params.id), params.grant, acting(deps, principal));
            set.status = 204;
          },
          {
            admin: true,
            params: GrantParams,
            detail: { tags, summary: "Revoke a grant: deleted here (that user's next call needs consent again) and revoked at the authorization server", responses: NO_CONTENT },
          },
        )
        .post(
          "/tool-servers/:id/tokens/listing",
          async ({ principal, params, set }) => {
            const server = await oauthServer(principal.orgId, params.id);
            const link = await consentLink(deps, server, null);
            await db.transaction(async (tx) =>
              recordChange(tx, acting(deps, principal), {
                orgId: principal.orgId,
                workspaceId: server.workspaceId,
                action: "tool_server.listing_connect",
                target: { type: "tool_server", id: server.id, name: server.name },
              }),
            );
            set.status = 201;
            return { url: link.url, expires_at: new Date(link.expiresAt).toISOString() };
          },
          {
            admin: true,
            params: ServerParams,
            response: { 201: ToolServerConsentLink },
            detail: { tags, summary: "A consent link for the server's listing grant (the token runtimes list its tools with; never used for a user's call)" },
          },
        ),
    );
}
