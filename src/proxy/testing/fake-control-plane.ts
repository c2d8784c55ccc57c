// An in-process stand-in for the control plane's runtime API (src/contract/runtime-api.ts),
// for the proxy's own tests: bootstrap, policy bundle with ETag/304, heartbeat, audit records
// (deduplicated by id), claims. Integration tests use the real control plane instead.
import { join } from "node:path";
import type { AuditRecord } from "../../contract/audit.ts";
import type { PolicyBundle } from "../../contract/bundle.ts";
import type { ToolManifest } from "../../contract/manifest.ts";
import type { BootstrapRequest, BudgetState, HeartbeatRequest, McpToolsReport } from "../../contract/runtime-api.ts";

export type FakeControlPlane = {
  url: string;
  token: string;
  bundle: PolicyBundle;
  /** 503 on every call while true. */
  down: boolean;
  /** Answer every call with this status (401 rotated token, 404 deleted installation, 429 …) while set. */
  refuseWith: number | null;
  /** Fail this many audit batches with 500 before accepting. */
  failAuditBatches: number;
  bootstraps: BootstrapRequest[];
  heartbeats: { body: HeartbeatRequest; replica: string | null }[];
  bundleAnswers: { status: number; ifNoneMatch: string | null; replica: string | null; version: string | null }[];
  audit: Map<string, AuditRecord>;
  auditBatches: number;
  claims: { remote_user_id: string }[];
  /** What GET limits answers (budgets with their spend); 404 while null, as a control plane before budgets. */
  budgets: BudgetState[] | null;
  /** Manifests received by PUT tools; each replaces the bundle's tools (revision + 1), as the real one does. */
  toolPuts: ToolManifest[];
  /** Reports received by PUT mcp-tools; each puts the reported servers' tools in the bundle (allow-list and overrides applied), as the real one does. */
  mcpReports: McpToolsReport[];
  digestKey: Uint8Array;
  setBundle(change: Partial<PolicyBundle>): void;
  stop(): Promise<void>;
};

/**
 * The environment (config.ts loadConfig) of a proxy daemon a test runs against this fake
 * control plane: its URL and token; state, socket (`p.sock`) and spool under `dir`; polls and
 * heartbeats an hour apart, so that only what the test triggers happens. `over` adds or replaces variables.
 */
export function daemonEnv(cp: FakeControlPlane, dir: string, over: Record<string, string> = {}): Record<string, string> {
  return {
    SVC_RUNTIME_TOKEN: cp.token,
    SVC_RUNTIME_CONTROL_PLANE_URL: cp.url,
    SVC_PROXY_STATE_DIR: join(dir, "state"),
    SVC_RUNTIME_SOCKET_PATH: join(dir, "p.sock"),
    SVC_PROXY_AUDIT: join(dir, "spool"),
    SVC_PROXY_POLL_INTERVAL: "1h",
    SVC_PROXY_HEARTBEAT_INTERVAL: "1h",
    // the test doubles (model provider, MCP servers) listen on loopback: tests opt in to it
    SVC_PROXY_ALLOW_PRIVATE_OUTBOUND: "127.0.0.1,::1,localhost",
    ...over,
  };
}

export function startFakeControlPlane(bundle: PolicyBundle, token = "svc_rt_test"): FakeControlPlane {
  const digestKey = crypto.getRandomValues(new Uint8Array(32));
  const cp: FakeControlPlane = {
    url: "",
    token,
    bundle,
    down: false,
    refuseWith: null,
    failAuditBatches: 0,
    bootstraps: [],
    heartbeats: [],
    bundleAnswers: [],
    audit: new Map(),
    auditBatches: 0,
    claims: [],
    budgets: null,
    toolPuts: [],
    mcpReports: [],
    digestKey,
    setBundle(change) {
      cp.bundle = { ...cp.bundle, ...change, revision: cp.bundle.revision + 1 };
    },
    async stop() {
      await server.stop(true);
    },
  };
  const problem = (status: number, code: string) =>
    Response.json({ type: `urn:svc:problem:${code}`, title: code, status, detail: code, code }, { status, headers: { "content-type": "application/problem+json" } });
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const u = new URL(req.url);
      if (cp.down) return problem(503, "unavailable");
      if (cp.refuseWith !== null) return problem(cp.refuseWith, cp.refuseWith === 401 ? "unauthorized" : cp.refuseWith === 404 ? "not_found" : "refused");
      if (req.headers.get("authorization") !== `Bearer ${cp.token}`) return problem(401, "unauthorized");
      const replica = req.headers.get("x-svc-replica");
      const route = `${req.method} ${u.pathname}`;
      switch (route) {
        case "POST /api/v1/runtime/bootstrap": {
          const body = (await req.json()) as BootstrapRequest;
          cp.bootstraps.push(body);
          return Response.json({
            installation: { id: cp.bundle.installation_id, name: "test", platform: "chatui" },
            organization_id: cp.bundle.organization_id,
            workspace_id: cp.bundle.workspace_id,
            agent_id: cp.bundle.agent_id,
            digest_key: { id: "dk_TEST", key: Buffer.from(digestKey).toString("base64") },
            poll_interval_seconds: 60,
            heartbeat_interval_seconds: 60,
          });
        }
        case "GET /api/v1/runtime/policy-bundle": {
          const etag = `"r${cp.bundle.revision}"`;
          const inm = req.headers.get("if-none-match");
          const status = inm === etag ? 304 : 200;
          cp.bundleAnswers.push({ status, ifNoneMatch: inm, replica, version: u.searchParams.get("version") });
          if (status === 304) return new Response(null, { status: 304, headers: { etag } });
          return Response.json({ ...cp.bundle, version: Number(u.searchParams.get("version") ?? 1) }, { headers: { etag } });
        }
        case "POST /api/v1/runtime/heartbeat":
          cp.heartbeats.push({ body: (await req.json()) as HeartbeatRequest, replica });
          return new Response(null, { status: 204 });
        case "POST /api/v1/runtime/audit-records": {
          cp.auditBatches++;
          if (cp.failAuditBatches > 0) {
            cp.failAuditBatches--;
            return problem(500, "internal");
          }
          const { records } = (await req.json()) as { records: AuditRecord[] };
          let inserted = 0;
          for (const r of records) {
            if (!cp.audit.has(r.id)) inserted++;
            cp.audit.set(r.id, r);
          }
          return Response.json({ acknowledged: records.map((r) => r.id), inserted, duplicates: records.length - inserted });
        }
        case "PUT /api/v1/runtime/tools": {
          const m = (await req.json()) as ToolManifest;
          cp.toolPuts.push(m);
          const before = new Set(cp.bundle.tools.map((t) => t.name));
          cp.setBundle({ tools: m.tools.map((t) => ({ name: t.name, access: t.access, required_capabilities: t.required_capabilities })) });
          const added = m.tools.filter((t) => !before.has(t.name)).length;
          return Response.json({ added, removed: before.size - (m.tools.length - added), unchanged: m.tools.length - added, updated: 0, tool_count: m.tools.length });
        }
        case "PUT /api/v1/runtime/mcp-tools": {
          const r = (await req.json()) as McpToolsReport;
          cp.mcpReports.push(r);
          const servers = new Map((cp.bundle.tool_servers ?? []).map((s) => [s.name, s]));
          const reported = new Set(r.servers.map((s) => s.server).filter((n) => servers.has(n)));
          const kept = cp.bundle.tools.filter((t) => !reported.has(t.name.slice(0, t.name.indexOf("."))));
          const added = r.servers.flatMap((s) => {
            const def = servers.get(s.server);
            if (!def) return [];
            return s.tools
              .filter((t) => def.allowed_tools === null || def.allowed_tools.includes(t.upstream))
              .map((t) => ({
                name: t.name,
                access: Object.hasOwn(def.access_overrides, t.upstream) ? def.access_overrides[t.upstream]! : t.access,
                required_capabilities: [],
                server: s.server,
                upstream: t.upstream,
              }));
          });
          const tools = [...kept, ...added].sort((a, b) => (a.name < b.name ? -1 : 1));
          const changed = JSON.stringify(tools) !== JSON.stringify(cp.bundle.tools);
          if (changed) cp.setBundle({ tools });
          return Response.json({ changed, unknown_servers: r.servers.map((s) => s.server).filter((n) => !servers.has(n)) });
        }
        case "GET /api/v1/runtime/limits":
          if (cp.budgets === null) break;
          return Response.json({ budgets: cp.budgets, as_of: new Date().toISOString() });
        case "POST /api/v1/runtime/claims": {
          const body = (await req.json()) as { remote_user_id: string };
          cp.claims.push(body);
          return Response.json({ url: `${cp.url}/claim/tok_${cp.claims.length}`, expires_at: new Date(Date.now() + 900_000).toISOString() });
        }
      }
      return problem(404, "not_found");
    },
  });
  cp.url = `http://127.0.0.1:${server.port}`;
  return cp;
}
