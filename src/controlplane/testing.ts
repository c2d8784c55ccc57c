// An in-process control plane for tests: a fresh store (in-memory SQLite, or a PostgreSQL
// database when SVC_TEST_POSTGRES_URL is set), a random master key, one organization
// with its first owner and an admin API token. `call` sends a request through the app.
import { createApp } from "./app.ts";
import { bootstrapOwner } from "./auth/bootstrap.ts";
import type { QueryLog } from "./db/index.ts";
import { openTestStore } from "./db/test-store.ts";
import { type ControlPlaneConfig, type ControlPlaneDeps, defaultConfig } from "./deps.ts";
import { EmbeddedKms } from "./kms/index.ts";
import { silentLogger } from "../log/index.ts";

export type TestControlPlane = Awaited<ReturnType<typeof testControlPlane>>;

export async function testControlPlane(opts: { now?: () => number; email?: string; config?: Partial<ControlPlaneConfig>; logQuery?: QueryLog } = {}) {
  const store = await openTestStore(opts.logQuery);
  const deps: ControlPlaneDeps = {
    db: store.db,
    kms: EmbeddedKms.fromBase64(EmbeddedKms.generateKey()),
    // Tests run their doubles (OIDC provider, Graph) on loopback.
    config: { ...defaultConfig("http://127.0.0.1:8420"), allowPrivateOutbound: true, ...(opts.config ?? {}) },
    now: opts.now ?? Date.now,
    log: silentLogger,
  };
  const app = createApp(deps);
  const owner = await bootstrapOwner(deps, { email: opts.email ?? "owner@example.com", orgName: "Acme", password: "correct horse battery staple", withToken: true });
  const call = async (method: string, path: string, init: { body?: unknown; token?: string | null; headers?: Record<string, string> } = {}) => {
    const headers: Record<string, string> = { ...(init.headers ?? {}) };
    const token = init.token === undefined ? owner.token : init.token;
    if (token) headers.authorization = `Bearer ${token}`;
    if (init.body !== undefined) headers["content-type"] = "application/json";
    const res = await app.handle(new Request(`http://localhost${path}`, { method, headers, body: init.body === undefined ? undefined : JSON.stringify(init.body) }));
    const text = await res.text();
    let json: any = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    return { status: res.status, headers: res.headers, json, text };
  };
  /** Path under the owner's organization: org("/agents") → /api/v1/organizations/org_…/agents */
  const org = (path: string) => `/api/v1/organizations/${owner.orgId}${path}`;
  return { deps, store, app, call, org, orgId: owner.orgId, workspaceId: owner.workspaceId, adminToken: owner.token!, accountId: owner.accountId };
}
