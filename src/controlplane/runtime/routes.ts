// The runtime API under /api/v1/runtime (ARCHITECTURE.md "Runtime ↔ control plane"): what the
// proxy daemon and the boot tool sync call with the installation's runtime token. A token
// reaches only its own installation; admin tokens get 401 here. (POST claims: claims/routes.ts.)
import { Elysia, t } from "elysia";
import {
  AuditBatchResponse,
  BootstrapRequest,
  BootstrapResponse,
  DigestKeyMaterial,
  HeartbeatRequest,
  McpToolsReport,
  McpToolsResult,
  RecipientsResponse,
  ToolConflictProblem,
} from "../../contract/runtime-api.ts";
import { PolicyBundle } from "../../contract/bundle.ts";
import { recipientProblem } from "../../contract/age-recipient.ts";
import { SvcError } from "../../contract/errors.ts";
import { ToolManifest, ToolSyncResult } from "../../contract/manifest.ts";
import { recipientsFor } from "../audit-keys/recipients.ts";
import { AuditBatchEnvelope, ingestBatch } from "../audit/ingest.ts";
import { traceIngest } from "../traces.ts";
import { authPlugin } from "../auth/plugin.ts";
import { bundleDigest, bundleEtag, etagMatches, parseBundleVersion } from "../bundle/compile.ts";
import { bundleForm, servedEtags } from "../bundle/served-etags.ts";
import { expressibleFeatures } from "../replicas/service.ts";
import { loadBundle } from "../bundle/load.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";
import { currentDigestKey } from "../organizations/digest-keys.ts";
import { orgRevision } from "../organizations/service.ts";
import { clockSkewMs, recordHeartbeat, registerReplica } from "../installations/replicas.ts";
import { syncTools } from "../tools/registry.ts";
import { reportListedTools } from "../tool-servers/catalogue.ts";
import { NO_CONTENT } from "../http/openapi-complete.ts";

async function bootstrap(deps: ControlPlaneDeps, caller: RuntimeCaller, body: BootstrapRequest): Promise<BootstrapResponse> {
  const problem = recipientProblem(body.credential_sync_recipient);
  if (problem) throw new SvcError("invalid_recipient", `credential_sync_recipient: ${problem}`);
  await registerReplica(deps.db, caller.installationId, {
    replicaId: body.replica_id,
    credentialSyncRecipient: body.credential_sync_recipient,
    version: body.version,
    hostname: body.hostname ?? null,
    now: deps.now(),
  });
  const digest = await digestKeyMaterial(deps, caller.orgId);
  deps.log.info("runtime bootstrapped", { installation: caller.installationId, replica: body.replica_id, version: body.version });
  return {
    installation: { id: caller.installationId, name: caller.name, platform: "chatui" },
    organization_id: caller.orgId,
    workspace_id: caller.workspaceId,
    agent_id: caller.agentId,
    digest_key: digest,
    poll_interval_seconds: deps.config.pollIntervalSeconds,
    heartbeat_interval_seconds: deps.config.heartbeatIntervalSeconds,
  };
}

async function digestKeyMaterial(deps: ControlPlaneDeps, orgId: string): Promise<DigestKeyMaterial> {
  const digest = await currentDigestKey(deps, orgId);
  return { id: digest.id, key: Buffer.from(digest.key).toString("base64") };
}

/** GET policy-bundle: 304 after one revision lookup when If-None-Match still names it. */
async function policyBundle(deps: ControlPlaneDeps, caller: RuntimeCaller, rawVersion: string | undefined, rawConditions: string | undefined, ifNoneMatch: string | undefined): Promise<Response> {
  const conditions = rawConditions === "1";
  const version = parseBundleVersion(rawVersion);
  if (version === null) {
    throw new SvcError("validation_failed", `bundle version "${rawVersion}" is not served; use version=1 or version=2`, {
      errors: [{ path: "/version", message: "must be 1 or 2" }],
    });
  }
  const served = servedEtags(deps);
  const form = bundleForm(version, conditions, expressibleFeatures(deps).key);
  if (ifNoneMatch) {
    const revision = caller.orgRevision ?? (await orgRevision(deps.db, caller.orgId));
    const etag = served.get(caller.installationId, form, revision);
    if (etag && etagMatches(ifNoneMatch, etag)) return new Response(null, { status: 304, headers: { etag } });
  }
  const bundle = await loadBundle(deps, caller, version, conditions);
  const etag = bundleEtag(bundle.revision, version, conditions, bundleDigest(bundle));
  served.set(caller.installationId, form, bundle.revision, etag);
  // Compiled by another replica, or before a restart: the same body is still a 304.
  if (etagMatches(ifNoneMatch, etag)) return new Response(null, { status: 304, headers: { etag } });
  return new Response(JSON.stringify(bundle), {
    headers: { "content-type": "application/json", etag, "cache-control": "no-cache" },
  });
}

export function runtimeRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "runtime-routes", prefix: "/runtime" })
    .use(authPlugin(deps))
    .post("/bootstrap", async ({ runtime, body }) => bootstrap(deps, runtime, body), {
      runtime: true,
      body: BootstrapRequest,
      response: BootstrapResponse,
      detail: { summary: "Who am I: register the replica, get ids, the digest key and intervals", tags: ["runtime"] },
    })
    .get("/policy-bundle", async ({ runtime, query, headers }) => policyBundle(deps, runtime, query.version, query.conditions, headers["if-none-match"]), {
      runtime: true,
      query: t.Object({
        version: t.Optional(t.String({ maxLength: 10 })),
        conditions: t.Optional(t.String({ maxLength: 1, description: "1: the proxy evaluates policy conditions and shadow policies" })),
      }),
      detail: {
        summary: 'The installation\'s policy bundle (ETag W/"<revision>-v<version>[c]-<body digest>"; If-None-Match → 304)',
        tags: ["runtime"],
        responses: { 200: { description: "PolicyBundle", content: { "application/json": { schema: PolicyBundle as object } } }, 304: { description: "unchanged" } },
      },
    })
    .get("/digest-key", async ({ runtime }) => digestKeyMaterial(deps, runtime.orgId), {
      runtime: true,
      response: DigestKeyMaterial,
      detail: { summary: "The organization's current digest key: fetched again when the bundle's digest_key_id names another (a rotation)", tags: ["runtime"] },
    })
    .put(
      "/tools",
      async ({ runtime, body }) => {
        const result = await syncTools(deps, runtime, body);
        deps.log.info("tools synced", { installation: runtime.installationId, ...result });
        return result;
      },
      {
        runtime: true,
        // required_capabilities is optional in a pack's declaration (spec §2); the contract
        // defaults it to [], which Elysia does not apply inside arrays, so fill it first.
        transform({ body }) {
          const tools = (body as { tools?: unknown } | null)?.tools;
          if (Array.isArray(tools)) for (const tl of tools) if (tl && typeof tl === "object" && !("required_capabilities" in tl)) (tl as Record<string, unknown>).required_capabilities = [];
        },
        body: ToolManifest,
        // 409: the contract's tool_conflict problem, which the boot tool sync reads.
        response: { 200: ToolSyncResult, 409: ToolConflictProblem },
        detail: { summary: "Replace the installation's registered tools with the manifest", tags: ["runtime"] },
      },
    )
    .put(
      "/mcp-tools",
      async ({ runtime, body }) => {
        const result = await reportListedTools(deps.db, runtime, body, deps.now());
        if (result.changed) deps.log.info("mcp tools listed", { installation: runtime.installationId, servers: body.servers.map((s) => `${s.server}:${s.tools.length}`).join(",") });
        return result;
      },
      {
        runtime: true,
        body: McpToolsReport,
        response: McpToolsResult,
        detail: { summary: "What this replica listed from the agent's MCP servers; the agent's bundles carry the union over its installations", tags: ["runtime"] },
      },
    )
    .get("/audit-encryption-recipients", async ({ runtime }) => ({ recipients: await recipientsFor(deps.db, runtime.orgId) }), {
      runtime: true,
      response: RecipientsResponse,
      detail: { summary: "Active customer recipients, plus escrow while on", tags: ["runtime"] },
    })
    .post(
      "/heartbeat",
      async ({ runtime, body, set }) => {
        const now = deps.now();
        await recordHeartbeat(
          deps.db,
          runtime.installationId,
          body.replica_id,
          {
            state: body.state,
            policyRevision: body.policy_revision,
            toolCount: body.tool_count,
            spoolDepth: body.spool_depth,
            version: body.version,
            lastSuccess: body.last_success,
            spoolState: body.spool_state ?? null,
            spoolFreeBytes: body.spool_free_bytes ?? null,
            spoolIndexing: body.spool_indexing ?? null,
            clockSkewMs: clockSkewMs(body.sent_at, now),
            toolServers: body.tool_servers,
            modelEndpoints: body.model_endpoints,
          },
          now,
        );
        set.status = 204;
      },
      { runtime: true, body: HeartbeatRequest, detail: { summary: "A replica's state report", tags: ["runtime"], responses: NO_CONTENT } },
    )
    .post(
      "/audit-records",
      async ({ runtime, body, request }) => traceIngest(deps, request.headers, runtime.installationId, body.records.length, async () => ingestBatch(deps, runtime, body.records)),
      {
        runtime: true,
        body: AuditBatchEnvelope,
        response: AuditBatchResponse,
        detail: { summary: "A batch of audit records; idempotent by record id; malformed, foreign or out-of-window records are rejected one by one", tags: ["runtime"] },
      },
    );
}
