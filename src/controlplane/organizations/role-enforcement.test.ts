// Table-driven over every admin route of the API and the console, read from the app itself:
// a `member` can do none of them (403, nothing changes), and organizations are isolated (a
// token of organization A gets 404 for every path of organization B, and for every one of B's
// objects named from A's own paths; nothing of B changes). A route added to the app without a
// row here fails the coverage test, so the table cannot fall behind.
import { describe, expect, test } from "bun:test";
import { createAccount } from "../auth/service.ts";
import { issueApiToken } from "../auth/api-tokens.ts";
import { actingAsSystem } from "../audit/admin-events.ts";
import { postNotice } from "../notices/service.ts";
import { accountWithRole, signInSession } from "../auth/test-fixtures.ts";
import { bootstrapOwner } from "../auth/bootstrap.ts";
import { newId } from "../../contract/ids.ts";
import { tables } from "../db/index.ts";
import { PRESESSION_COOKIE } from "../console/csrf.ts";
import { auditRecord, newRecipient } from "../runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";
import { REFUSAL_BOUND } from "../audit/refusal-bound.ts";

const ORG = "/api/v1/organizations/:org";
const PASSWORD = "correct horse battery staple";

/** The objects of one organization that the routes name. */
type World = {
  orgId: string;
  token: string;
  ownerAccountId: string;
  agentId: string;
  installationId: string;
  profileId: string;
  serverId: string;
  budgetId: string;
  sinkId: string;
  policyId: string;
  userId: string;
  groupId: string;
  keyId: string;
  digestKeyId: string;
  recordId: string;
  apiTokenId: string;
  recoveryRequestId: string;
  noticeId: string;
};

async function populate(cp: TestControlPlane, w: { orgId: string; token: string; ownerAccountId: string }): Promise<World> {
  const org = (p: string) => `/api/v1/organizations/${w.orgId}${p}`;
  const call = async (method: string, p: string, body?: unknown) => cp.call(method, org(p), { token: w.token, ...(body === undefined ? {} : { body }) });
  const must = async (r: Promise<{ status: number; json: any; text: string }>) => {
    const res = await r;
    if (res.status >= 300) throw new Error(`setup: ${res.status} ${res.text}`);
    return res.json;
  };
  const agent = await must(call("POST", "/agents", { name: "bot", workspace: "default" }));
  const inst = await must(call("POST", "/installations", { platform: "chatui", name: "bot-chat", agent_id: agent.id, workspace: "default" }));
  const runtimeToken = (await must(call("POST", `/installations/${inst.id}/credential`, {}))).token as string;
  const profile = await must(call("POST", "/model-profiles", { display_name: "llm", endpoint: "https://llm.example.com/v1", auth_type: "none", default_model: "m", workspace: "default" }));
  const server = await must(call("POST", "/tool-servers", { name: "time", transport: "stdio", command: "mcp-server-time", workspace: "default" }));
  await must(call("POST", `/tool-servers/${server.id}/assign`, { agent_id: agent.id }));
  const policy = await must(call("POST", "/policies", { name: "p", src: "*", dst: "model:invoke", effect: "permit", workspace: "default" }));
  const budget = await must(call("POST", "/budgets", { name: "b", scope: "agent", target: agent.id, period: "day", unit: "tokens", limit: 1000 }));
  const sink = await must(call("POST", "/siem-sinks", { name: "siem", kind: "webhook", endpoint: "https://siem.example.com/hec", secret: "a-long-enough-hmac-secret" }));
  const user = await must(call("POST", "/users", { email: `person@${w.orgId.toLowerCase()}.test` }));
  const group = await must(call("POST", "/groups", { name: "staff" }));
  const key = await must(call("POST", "/audit-encryption-keys", { name: "k", public_key: (await newRecipient()).recipient }));
  const digestKeyId = (await must(call("GET", "/audit-digest-keys"))).keys[0].id as string;
  const wsId = (await must(call("GET", "/workspaces"))).workspaces[0].id as string;
  const rec = auditRecord({ orgId: w.orgId, workspaceId: wsId, agentId: agent.id, installationId: inst.id, name: "bot-chat", token: runtimeToken });
  const shipped = await cp.call("POST", "/api/v1/runtime/audit-records", { token: runtimeToken, body: { records: [rec] } });
  expect(shipped.json.inserted).toBe(1);
  const apiToken = await issueApiToken(cp.deps, { accountId: w.ownerAccountId, orgId: w.orgId, name: "spare", signIn: { at: cp.deps.now() } }, actingAsSystem(cp.deps, "controlplane"));
  // A pending escrow recovery request (made directly: the record is digest-only, so the API would refuse it).
  const recoveryRequestId = newId("recoveryRequest");
  await cp.deps.db
    .insert(tables(cp.deps.db).auditRecoveryRequests)
    .values({ id: recoveryRequestId, orgId: w.orgId, recordId: rec.id, reason: "test", requestedBy: w.ownerAccountId, status: "pending", createdAt: cp.deps.now() });
  // A notice of another account's step, which the owner sees until they dismiss it.
  const actor = await createAccount(cp.deps.db, { email: `actor@${w.orgId.toLowerCase()}.test` });
  const noticeId = await postNotice(cp.deps.db, { orgId: w.orgId, action: "audit:recovery.request", result: "ok", actorAccountId: actor.id, text: "requested", ref: recoveryRequestId }, cp.deps.now());
  return {
    ...w,
    recoveryRequestId,
    noticeId,
    agentId: agent.id,
    installationId: inst.id,
    profileId: profile.id,
    serverId: server.id,
    budgetId: budget.id,
    sinkId: sink.id,
    policyId: policy.id,
    userId: user.id,
    groupId: group.id,
    keyId: key.id,
    digestKeyId,
    recordId: rec.id,
    apiTokenId: apiToken.id,
  };
}

type Call = { path: string; body?: unknown };
/** Every admin route: the concrete path and a body that passes validation, for the objects of `w`. */
const API_ADMIN_ROUTES: Record<string, (w: World) => Call> = {
  "GET /api-tokens": () => ({ path: "/api-tokens" }),
  "POST /api-tokens": () => ({ path: "/api-tokens", body: { name: "x" } }),
  "DELETE /api-tokens/:id": (w) => ({ path: `/api-tokens/${w.apiTokenId}` }),
  "GET /workspaces": () => ({ path: "/workspaces" }),
  "POST /workspaces": () => ({ path: "/workspaces", body: { name: "more" } }),
  "GET /members": () => ({ path: "/members" }),
  "POST /members": () => ({ path: "/members", body: { email: "someone@example.com", role: "admin" } }),
  "POST /invites": () => ({ path: "/invites", body: { email: "invited@example.com" } }),
  "DELETE /members/:account_id": (w) => ({ path: `/members/${w.ownerAccountId}` }),
  "GET /agents": () => ({ path: "/agents" }),
  "POST /agents": () => ({ path: "/agents", body: { name: "another", workspace: "default" } }),
  "GET /agents/:id": (w) => ({ path: `/agents/${w.agentId}` }),
  "GET /installations": () => ({ path: "/installations" }),
  "POST /installations": (w) => ({ path: "/installations", body: { platform: "chatui", name: "another", agent_id: w.agentId, workspace: "default" } }),
  "GET /installations/:id": (w) => ({ path: `/installations/${w.installationId}` }),
  "GET /installations/:id/agents": (w) => ({ path: `/installations/${w.installationId}/agents` }),
  "GET /installations/:id/tools": (w) => ({ path: `/installations/${w.installationId}/tools` }),
  "GET /installations/:id/policy-bundle": (w) => ({ path: `/installations/${w.installationId}/policy-bundle` }),
  "POST /installations/:id/credential": (w) => ({ path: `/installations/${w.installationId}/credential`, body: { rotate: true } }),
  "DELETE /installations/:id": (w) => ({ path: `/installations/${w.installationId}` }),
  "GET /runtime-recipients": () => ({ path: "/runtime-recipients?workspace=default" }),
  "GET /model-profiles": () => ({ path: "/model-profiles" }),
  "POST /model-profiles": () => ({ path: "/model-profiles", body: { display_name: "another", endpoint: "https://llm.example.com/v1", auth_type: "none", default_model: "m", workspace: "default" } }),
  "GET /model-profiles/:id": (w) => ({ path: `/model-profiles/${w.profileId}` }),
  "PUT /model-profiles/:id/api-key": (w) => ({ path: `/model-profiles/${w.profileId}/api-key`, body: { api_key_sealed: "YWdl", sealed_to: ["rep_x"] } }),
  "GET /model-profiles/:id/readiness": (w) => ({ path: `/model-profiles/${w.profileId}/readiness` }),
  "PUT /model-profiles/:id/prices": (w) => ({ path: `/model-profiles/${w.profileId}/prices`, body: { prices: { m: { prompt: 1, completion: 2 } } } }),
  "POST /model-profiles/:id/assign": (w) => ({ path: `/model-profiles/${w.profileId}/assign`, body: { agent_id: w.agentId } }),
  "GET /model-profile-assignments": (w) => ({ path: `/model-profile-assignments?agent_id=${w.agentId}` }),
  "GET /tool-servers": () => ({ path: "/tool-servers" }),
  "POST /tool-servers": () => ({ path: "/tool-servers", body: { name: "docs", transport: "http", url: "https://mcp.example.com/mcp", workspace: "default" } }),
  "GET /tool-servers/:id": (w) => ({ path: `/tool-servers/${w.serverId}` }),
  "DELETE /tool-servers/:id": (w) => ({ path: `/tool-servers/${w.serverId}` }),
  "PATCH /tool-servers/:id": (w) => ({ path: `/tool-servers/${w.serverId}`, body: { url: "https://mcp2.example.com/mcp" } }),
  "PUT /tool-servers/:id/secrets": (w) => ({ path: `/tool-servers/${w.serverId}/secrets`, body: { secrets_sealed: "YWdl", secret_names: ["TOKEN"], sealed_to: ["rep_x"] } }),
  "PUT /tool-servers/:id/tools": (w) => ({ path: `/tool-servers/${w.serverId}/tools`, body: { allowed_tools: null, access_overrides: { get_current_time: "write" } } }),
  "GET /tool-servers/:id/readiness": (w) => ({ path: `/tool-servers/${w.serverId}/readiness` }),
  "POST /tool-servers/:id/assign": (w) => ({ path: `/tool-servers/${w.serverId}/assign`, body: { agent_id: w.agentId } }),
  "DELETE /tool-servers/:id/assignments/:agent": (w) => ({ path: `/tool-servers/${w.serverId}/assignments/${w.agentId}` }),
  "GET /tool-servers/:id/tokens": (w) => ({ path: `/tool-servers/${w.serverId}/tokens` }),
  "DELETE /tool-servers/:id/tokens/:grant": (w) => ({ path: `/tool-servers/${w.serverId}/tokens/ogr_X` }),
  "POST /tool-servers/:id/tokens/listing": (w) => ({ path: `/tool-servers/${w.serverId}/tokens/listing` }),
  "GET /tool-server-assignments": (w) => ({ path: `/tool-server-assignments?agent_id=${w.agentId}` }),
  "POST /policies/apply": () => ({ path: "/policies/apply", body: { workspace: "default", policies: [], dry_run: true } }),
  "PATCH /policies/:id": (w) => ({ path: `/policies/${w.policyId}`, body: { name: "renamed" } }),
  "GET /budgets": () => ({ path: "/budgets" }),
  "POST /budgets": (w) => ({ path: "/budgets", body: { name: "more", scope: "agent", target: w.agentId, period: "month", unit: "tokens", limit: 5 } }),
  "DELETE /budgets/:id": (w) => ({ path: `/budgets/${w.budgetId}` }),
  "GET /siem-sinks": () => ({ path: "/siem-sinks" }),
  "POST /siem-sinks": () => ({ path: "/siem-sinks", body: { name: "more", kind: "syslog", endpoint: "siem.example.com:6514" } }),
  "DELETE /siem-sinks/:id": (w) => ({ path: `/siem-sinks/${w.sinkId}` }),
  "PATCH /siem-sinks/:id": (w) => ({ path: `/siem-sinks/${w.sinkId}`, body: { format: "ocsf" } }),
  "GET /policies": () => ({ path: "/policies" }),
  "POST /policies": () => ({ path: "/policies", body: { name: "q", src: "*", dst: "tool:x", effect: "permit", workspace: "default" } }),
  "DELETE /policies/:id": (w) => ({ path: `/policies/${w.policyId}` }),
  "GET /users": () => ({ path: "/users" }),
  "POST /users": () => ({ path: "/users", body: { email: "new-user@example.com" } }),
  "GET /users/:id": (w) => ({ path: `/users/${w.userId}` }),
  "POST /users/:id/disable": (w) => ({ path: `/users/${w.userId}/disable` }),
  "POST /users/:id/enable": (w) => ({ path: `/users/${w.userId}/enable` }),
  "GET /users/:id/remote-identities": (w) => ({ path: `/users/${w.userId}/remote-identities` }),
  "POST /users/:id/remote-identities": (w) => ({ path: `/users/${w.userId}/remote-identities`, body: { platform: "chatui", remote_user_id: "fe-new" } }),
  "DELETE /users/:id/remote-identities/:remote_user_id": (w) => ({ path: `/users/${w.userId}/remote-identities/fe-new` }),
  "GET /remote-identities": () => ({ path: "/remote-identities" }),
  "GET /groups": () => ({ path: "/groups" }),
  "POST /groups": () => ({ path: "/groups", body: { name: "more-staff" } }),
  "POST /groups/:id/members": (w) => ({ path: `/groups/${w.groupId}/members`, body: { user_id: w.userId } }),
  "DELETE /groups/:id/members/:user_id": (w) => ({ path: `/groups/${w.groupId}/members/${w.userId}` }),
  "GET /audit-encryption-keys": () => ({ path: "/audit-encryption-keys" }),
  "POST /audit-encryption-keys": () => ({ path: "/audit-encryption-keys", body: { name: "other", public_key: "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p" } }),
  "GET /audit-encryption-keys/:id": (w) => ({ path: `/audit-encryption-keys/${w.keyId}` }),
  "POST /audit-encryption-keys/:keyAction": (w) => ({ path: `/audit-encryption-keys/${w.keyId}:disable` }),
  "GET /audit-digest-keys": () => ({ path: "/audit-digest-keys" }),
  "POST /audit-digest-keys": () => ({ path: "/audit-digest-keys" }),
  "GET /audit-digest-keys/:id": (w) => ({ path: `/audit-digest-keys/${w.digestKeyId}` }),
  "GET /assertion-keys": () => ({ path: "/assertion-keys" }),
  "POST /assertion-keys": () => ({ path: "/assertion-keys", body: {} }),
  "GET /audit-records": () => ({ path: "/audit-records" }),
  "GET /audit-records/export": () => ({ path: "/audit-records/export" }),
  "GET /usage": () => ({ path: "/usage?by=user" }),
  "GET /usage/series": () => ({ path: "/usage/series?by=user" }),
  "GET /audit-records/:id": (w) => ({ path: `/audit-records/${w.recordId}` }),
  "GET /audit-records/:id/ciphertext": (w) => ({ path: `/audit-records/${w.recordId}/ciphertext` }),
  "GET /audit-checkpoints": () => ({ path: "/audit-checkpoints" }),
  "POST /audit-checkpoints": () => ({ path: "/audit-checkpoints" }),
  "GET /audit-chain-flags": () => ({ path: "/audit-chain-flags" }),
  "GET /audit-signing-key": () => ({ path: "/audit-signing-key" }),
  "POST /audit-signing-key/rotate": () => ({ path: "/audit-signing-key/rotate" }),
  "POST /audit-verifications": () => ({ path: "/audit-verifications" }),
  "GET /audit-verifications/latest": () => ({ path: "/audit-verifications/latest" }),
  "GET /versions": () => ({ path: "/versions" }),
  "POST /audit-retention/run": () => ({ path: "/audit-retention/run" }),
  "GET /audit-retention/run": () => ({ path: "/audit-retention/run" }),
  "GET /audit-activity": () => ({ path: "/audit-activity" }),
  "GET /audit-recovery-requests": () => ({ path: "/audit-recovery-requests" }),
  "POST /audit-recovery-requests": (w) => ({ path: "/audit-recovery-requests", body: { record_id: w.recordId, reason: "incident" } }),
  "GET /audit-recovery-requests/:id": (w) => ({ path: `/audit-recovery-requests/${w.recoveryRequestId}` }),
  "POST /audit-recovery-requests/:id/approve": (w) => ({ path: `/audit-recovery-requests/${w.recoveryRequestId}/approve` }),
  "POST /audit-recovery-requests/:id/fetch": (w) => ({ path: `/audit-recovery-requests/${w.recoveryRequestId}/fetch` }),
  "GET /audit-recovery-policy": () => ({ path: "/audit-recovery-policy" }),
  "PUT /audit-recovery-policy": () => ({ path: "/audit-recovery-policy", body: { approver_min_age_hours: 48 } }),
  "GET /notices": () => ({ path: "/notices" }),
  "POST /notices/:id/dismiss": (w) => ({ path: `/notices/${w.noticeId}/dismiss` }),
  "PUT /directory-sync": () => ({
    path: "/directory-sync",
    body: {
      tenant_id: "contoso.onmicrosoft.com",
      client_id: "00000000-0000-4000-8000-000000000001",
      app_id: "00000000-0000-4000-8000-000000000002",
      client_secret: "s",
      dry_run: true,
      create_users: false,
    },
  }),
  "GET /directory-sync": () => ({ path: "/directory-sync" }),
  "POST /directory-sync/enable": () => ({ path: "/directory-sync/enable" }),
  "POST /directory-sync/disable": () => ({ path: "/directory-sync/disable" }),
  "POST /directory-sync/run": () => ({ path: "/directory-sync/run", body: { dry_run: true } }),
  "GET /directory-sync/report": () => ({ path: "/directory-sync/report" }),
  "GET /settings": () => ({ path: "/settings" }),
  "PATCH /settings": () => ({ path: "/settings", body: { escrow_enabled: false, audit_retention_days: 30 } }),
};

/** Admin routes outside an organization's path: what `svc login` approval uses. */
const OTHER_ADMIN_ROUTES = ["GET /api/v1/auth/login-requests/:id", "POST /api/v1/auth/login-requests/:id/approve"];

/** Console paths that are not admin pages: before a session, claim and consent links, a member's home. */
const CONSOLE_PUBLIC = new Set([
  "GET /",
  "GET /sign-in",
  "POST /sign-in",
  "POST /sign-out",
  "POST /switch-org",
  "GET /sso/start",
  "GET /sso/callback",
  "GET /claim/:token",
  "POST /claim/:token",
  // A user's one-time OAuth consent link for a tool server (its page, and the button that takes it, CSRF-checked before a session) and the authorization server's return (issue 32): the link's token and the state are the credential.
  "GET /oauth/tool-servers/consent/:token",
  "POST /oauth/tool-servers/consent/:token",
  "GET /oauth/tool-servers/callback",
  "GET /invite/:token",
  "POST /invite/:token",
]);

type ConsoleCall = { path: string; form?: Record<string, string> };
/** Every console admin page and form, for the objects of `w`. */
const CONSOLE_ADMIN_ROUTES: Record<string, (w: World) => ConsoleCall> = {
  "GET /login/approve": () => ({ path: "/login/approve?request=lrq_X" }),
  "POST /login/approve": () => ({ path: "/login/approve", form: { request: "lrq_X" } }),
  "GET /agents": () => ({ path: "/agents" }),
  "POST /agents": () => ({ path: "/agents", form: { name: "console-agent", workspace: "default" } }),
  "GET /installations": () => ({ path: "/installations" }),
  "GET /installations/:id": (w) => ({ path: `/installations/${w.installationId}` }),
  "GET /model-profiles": () => ({ path: "/model-profiles" }),
  "GET /tool-servers": () => ({ path: "/tool-servers" }),
  "GET /tool-servers/:id": (w) => ({ path: `/tool-servers/${w.serverId}` }),
  "GET /usage": () => ({ path: "/usage" }),
  "GET /policies": () => ({ path: "/policies" }),
  "POST /policies": () => ({ path: "/policies", form: { name: "c", src: "*", dst: "tool:y", effect: "permit", workspace: "default" } }),
  "GET /policies/:id/delete": (w) => ({ path: `/policies/${w.policyId}/delete` }),
  "POST /policies/:id/delete": (w) => ({ path: `/policies/${w.policyId}/delete` }),
  "GET /policies/:id/edit": (w) => ({ path: `/policies/${w.policyId}/edit` }),
  "POST /policies/:id": (w) => ({ path: `/policies/${w.policyId}`, form: { name: "renamed", effect: "deny", mode: "shadow" } }),
  "GET /users": () => ({ path: "/users" }),
  "POST /users/:id/disable": (w) => ({ path: `/users/${w.userId}/disable` }),
  "POST /users/:id/enable": (w) => ({ path: `/users/${w.userId}/enable` }),
  "GET /groups": () => ({ path: "/groups" }),
  "GET /identities": () => ({ path: "/identities" }),
  "GET /members": () => ({ path: "/members" }),
  "POST /members": () => ({ path: "/members", form: { email: "console-added@example.com", role: "admin" } }),
  "GET /members/:id/remove": (w) => ({ path: `/members/${w.ownerAccountId}/remove` }),
  "POST /members/:id/remove": (w) => ({ path: `/members/${w.ownerAccountId}/remove` }),
  "GET /api-tokens/:id/revoke": (w) => ({ path: `/api-tokens/${w.apiTokenId}/revoke` }),
  "POST /api-tokens/:id/revoke": (w) => ({ path: `/api-tokens/${w.apiTokenId}/revoke` }),
  "GET /audit": () => ({ path: "/audit" }),
  "GET /audit/export.csv": () => ({ path: "/audit/export.csv" }),
  "GET /audit/:id": (w) => ({ path: `/audit/${w.recordId}` }),
  "GET /audit/admin": () => ({ path: "/audit/admin" }),
  "GET /audit-keys": () => ({ path: "/audit-keys" }),
  "GET /siem-sinks": () => ({ path: "/siem-sinks" }),
  "POST /siem-sinks": () => ({ path: "/siem-sinks", form: { name: "console", kind: "syslog", endpoint: "siem.example.com:6514" } }),
  "GET /siem-sinks/:id/delete": (w) => ({ path: `/siem-sinks/${w.sinkId}/delete` }),
  "POST /siem-sinks/:id/delete": (w) => ({ path: `/siem-sinks/${w.sinkId}/delete` }),
  "POST /audit-keys": () => ({ path: "/audit-keys", form: { name: "c", public_key: "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p" } }),
  "GET /audit-keys/:id/disable": (w) => ({ path: `/audit-keys/${w.keyId}/disable` }),
  "POST /audit-keys/:id/disable": (w) => ({ path: `/audit-keys/${w.keyId}/disable` }),
  "POST /audit-keys/verify": () => ({ path: "/audit-keys/verify" }),
  "POST /audit-keys/checkpoint": () => ({ path: "/audit-keys/checkpoint" }),
  "POST /audit-recovery": (w) => ({ path: "/audit-recovery", form: { record_id: w.recordId, reason: "incident" } }),
  "POST /audit-recovery/:id/approve": (w) => ({ path: `/audit-recovery/${w.recoveryRequestId}/approve` }),
  "POST /audit-recovery/:id/fetch": (w) => ({ path: `/audit-recovery/${w.recoveryRequestId}/fetch` }),
  "POST /notices/:id/dismiss": (w) => ({ path: `/notices/${w.noticeId}/dismiss`, form: { next: "/" } }),
  "GET /settings": () => ({ path: "/settings" }),
  "POST /settings/escrow": () => ({ path: "/settings/escrow", form: { escrow_enabled: "true" } }),
  "POST /settings/sso": () => ({ path: "/settings/sso", form: { issuer: "https://idp.example.com", client_id: "c", client_secret: "s" } }),
  "GET /settings/sso/delete": () => ({ path: "/settings/sso/delete" }),
  "POST /settings/sso/delete": () => ({ path: "/settings/sso/delete" }),
};

function appRoutes(cp: TestControlPlane): string[] {
  return [...new Set((cp.app as unknown as { routes: Array<{ method: string; path: string }> }).routes.map((r) => `${r.method} ${r.path}`))];
}

/** Everything an organization holds that these routes could change, read with its own token. */
async function snapshot(cp: TestControlPlane, w: World): Promise<string> {
  // (the runtimes' records: the refusals of the calls under test are admin events, told below)
  const paths = [
    "/workspaces",
    "/members",
    "/agents",
    "/installations",
    "/model-profiles",
    "/policies",
    "/users",
    "/groups",
    "/remote-identities",
    "/audit-encryption-keys",
    "/audit-digest-keys",
    "/audit-records?kind=runtime",
    "/api-tokens",
    "/settings",
    `/installations/${w.installationId}`,
    `/model-profiles/${w.profileId}`,
    "/tool-servers",
    `/tool-servers/${w.serverId}`,
    "/budgets",
    "/siem-sinks",
    `/users/${w.userId}`,
    "/audit-recovery-policy",
    "/notices",
  ];
  const out: unknown[] = [];
  for (const p of paths) out.push((await cp.call("GET", `/api/v1/organizations/${w.orgId}${p}`, { token: w.token })).json);
  const sync = await cp.call("GET", `/api/v1/organizations/${w.orgId}/directory-sync`, { token: w.token });
  out.push(sync.status);
  // last_used_at of API tokens moves with use, a sink's lag_seconds with the clock, its lag_records with
  // every new record (the refusals' admin events included): not changes made by the calls under test.
  return JSON.stringify(out, (k, v) => (k === "last_used_at" || k === "lag_seconds" || k === "lag_records" ? undefined : v));
}

async function setup() {
  const cp = await testControlPlane();
  const a = await populate(cp, { orgId: cp.orgId, token: cp.adminToken, ownerAccountId: cp.accountId });
  const bo = await bootstrapOwner(cp.deps, { email: "owner@globex.test", orgName: "Globex", password: PASSWORD, withToken: true });
  const b = await populate(cp, { orgId: bo.orgId, token: bo.token!, ownerAccountId: bo.accountId });
  return { cp, a, b };
}

describe("the tables cover every admin route", () => {
  test("every organization route of the API and every console page is in a table, and nothing else", async () => {
    const cp = await testControlPlane();
    const routes = appRoutes(cp);
    const orgRoutes = routes.filter((r) => r.split(" ")[1]!.startsWith(ORG)).map((r) => r.replace(ORG, ""));
    expect(orgRoutes.sort()).toEqual(Object.keys(API_ADMIN_ROUTES).sort());
    for (const r of OTHER_ADMIN_ROUTES) expect(routes).toContain(r);
    const consoleRoutes = routes.filter((r) => {
      const p = r.split(" ")[1]!;
      // /metrics is the Prometheus scrape, behind its own token (SVC_CP_METRICS_TOKEN), not a console page.
      return !p.startsWith("/api/") && !p.startsWith("/console/assets/") && p !== "/healthz" && p !== "/readyz" && p !== "/metrics";
    });
    expect(consoleRoutes.filter((r) => !CONSOLE_PUBLIC.has(r)).sort()).toEqual(Object.keys(CONSOLE_ADMIN_ROUTES).sort());
  });
});

describe("a member can do no admin work", () => {
  test("every admin API route answers 403 forbidden to a member's API token and to a member's console session", async () => {
    const { cp, a } = await setup();
    const member = await accountWithRole(cp, "member", "plain.member@example.com");
    const session = await signInSession(cp, member.email);
    const before = await snapshot(cp, a);
    const failures: string[] = [];
    const check = (what: string, res: { status: number; json: any }) => {
      if (res.status !== 403 || res.json?.code !== "forbidden") failures.push(`${what} → ${res.status} ${JSON.stringify(res.json)?.slice(0, 120)}`);
    };
    for (const [route, call] of Object.entries(API_ADMIN_ROUTES)) {
      const method = route.split(" ")[0]!;
      const c = call(a);
      const path = `/api/v1/organizations/${a.orgId}${c.path}`;
      check(`${route} (token)`, await cp.call(method, path, { token: member.token, ...(c.body === undefined ? {} : { body: c.body }) }));
      check(`${route} (session)`, await cp.call(method, path, { token: null, headers: { cookie: session.cookie, "x-csrf-token": session.csrf }, ...(c.body === undefined ? {} : { body: c.body }) }));
    }
    const lr = (await cp.call("POST", "/api/v1/auth/login-requests", { token: null })).json;
    check("GET login request", await cp.call("GET", `/api/v1/auth/login-requests/${lr.id}`, { token: member.token }));
    check("approve login request", await cp.call("POST", `/api/v1/auth/login-requests/${lr.id}/approve`, { token: null, headers: { cookie: session.cookie, "x-csrf-token": session.csrf }, body: {} }));
    expect(failures).toEqual([]);
    expect(await snapshot(cp, a)).toBe(before);
    // The admin trail has the refusals, naming the member, as many as the bound lets through
    // (all these come from one address with one code: the rest are counted, not written).
    const refused = (await cp.call("GET", `/api/v1/organizations/${a.orgId}/audit-records?action=access.refused&limit=500`, { token: a.token })).json.records as Array<{ actor_id: string }>;
    expect(refused.length).toBe(REFUSAL_BOUND.perKey);
    expect(new Set(refused.map((r) => r.actor_id))).toEqual(new Set([member.accountId]));
  });

  test("every console admin page and form answers 403 to a member, with a valid form token, and changes nothing", async () => {
    const { cp, a } = await setup();
    const member = await accountWithRole(cp, "member", "plain.member@example.com");
    const first = await cp.app.handle(new Request("http://localhost/sign-in"));
    const pre = /svc_form=([^;]+)/.exec(first.headers.getSetCookie().join("\n"))![1]!;
    const signed = await cp.app.handle(
      new Request("http://localhost/sign-in", {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", cookie: `${PRESESSION_COOKIE}=${pre}` },
        body: new URLSearchParams({ email: member.email, password: PASSWORD, _csrf: pre }),
      }),
    );
    const sessionCookie = signed.headers
      .getSetCookie()
      .find((c) => c.startsWith("svc_session="))!
      .split(";")[0]!;
    const cookie = `${PRESESSION_COOKIE}=${pre}; ${sessionCookie}`;
    const home = await (await cp.app.handle(new Request("http://localhost/", { headers: { cookie } }))).text();
    const csrf = /action="\/sign-out">\s*<input type="hidden" name="_csrf" value="([^"]+)"/.exec(home)![1]!;
    const before = await snapshot(cp, a);
    const failures: string[] = [];
    for (const [route, call] of Object.entries(CONSOLE_ADMIN_ROUTES)) {
      const method = route.split(" ")[0]!;
      const c = call(a);
      const init: RequestInit =
        method === "GET"
          ? { headers: { cookie } }
          : { method, headers: { cookie, "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ ...(c.form ?? {}), _csrf: csrf }) };
      const res = await cp.app.handle(new Request(`http://localhost${c.path}`, init));
      if (res.status !== 403) failures.push(`${route} → ${res.status}`);
    }
    expect(failures).toEqual([]);
    expect(await snapshot(cp, a)).toBe(before);
  });
});

describe("organizations are isolated", () => {
  test("a token of organization A gets 404 on every path of organization B, and B does not change", async () => {
    const { cp, a, b } = await setup();
    const before = await snapshot(cp, b);
    const failures: string[] = [];
    for (const [route, call] of Object.entries(API_ADMIN_ROUTES)) {
      const method = route.split(" ")[0]!;
      const c = call(b);
      const res = await cp.call(method, `/api/v1/organizations/${b.orgId}${c.path}`, { token: a.token, ...(c.body === undefined ? {} : { body: c.body }) });
      if (res.status !== 404 || res.json?.code !== "not_found") failures.push(`${route} → ${res.status} ${res.text.slice(0, 120)}`);
    }
    expect(failures).toEqual([]);
    expect(await snapshot(cp, b)).toBe(before);
  });

  test("from its own paths, A reaches none of B's objects by id: 404, and B does not change", async () => {
    const { cp, a, b } = await setup();
    const before = await snapshot(cp, b);
    const failures: string[] = [];
    for (const [route, call] of Object.entries(API_ADMIN_ROUTES)) {
      if (!route.includes("/:")) continue;
      const method = route.split(" ")[0]!;
      const c = call(b);
      const res = await cp.call(method, `/api/v1/organizations/${a.orgId}${c.path}`, { token: a.token, ...(c.body === undefined ? {} : { body: c.body }) });
      if (res.status !== 404) failures.push(`${route} → ${res.status} ${res.text.slice(0, 120)}`);
    }
    // B's objects named in a body sent to A's paths.
    for (const [what, method, path, body] of [
      ["installation for B's agent", "POST", "/installations", { platform: "chatui", name: "x", agent_id: b.agentId, workspace: "default" }],
      ["assign A's profile to B's agent", "POST", `/model-profiles/${a.profileId}/assign`, { agent_id: b.agentId }],
      ["policy bound to B's agent", "POST", "/policies", { name: "x", src: "*", dst: "model:invoke", effect: "permit", workspace: "default", agent_id: b.agentId }],
      ["B's user into A's group", "POST", `/groups/${a.groupId}/members`, { user_id: b.userId }],
      ["B's agent's assignment", "GET", `/model-profile-assignments?agent_id=${b.agentId}`, undefined],
      ["assign A's tool server to B's agent", "POST", `/tool-servers/${a.serverId}/assign`, { agent_id: b.agentId }],
      ["B's agent's tool servers", "GET", `/tool-server-assignments?agent_id=${b.agentId}`, undefined],
      ["unassign A's tool server from B's agent", "DELETE", `/tool-servers/${a.serverId}/assignments/${b.agentId}`, undefined],
    ] as const) {
      const res = await cp.call(method, `/api/v1/organizations/${a.orgId}${path}`, { token: a.token, ...(body === undefined ? {} : { body }) });
      if (res.status !== 404) failures.push(`${what} → ${res.status} ${res.text.slice(0, 120)}`);
    }
    expect(failures).toEqual([]);
    expect(await snapshot(cp, b)).toBe(before);
  });

  test("A's console session reaches none of B's objects either", async () => {
    const { cp, a, b } = await setup();
    const owner = await signInSession(cp);
    const home = await (await cp.app.handle(new Request("http://localhost/", { headers: { cookie: owner.cookie } }))).text();
    const csrf = /action="\/sign-out">\s*<input type="hidden" name="_csrf" value="([^"]+)"/.exec(home)![1]!;
    const before = await snapshot(cp, b);
    const failures: string[] = [];
    for (const [route, call] of Object.entries(CONSOLE_ADMIN_ROUTES)) {
      if (!route.includes("/:")) continue;
      const method = route.split(" ")[0]!;
      const c = call(b);
      const init: RequestInit =
        method === "GET"
          ? { headers: { cookie: owner.cookie } }
          : { method, headers: { cookie: owner.cookie, "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ _csrf: csrf }) };
      const res = await cp.app.handle(new Request(`http://localhost${c.path}`, init));
      const text = await res.text();
      if (res.status !== 404) failures.push(`${route} → ${res.status}`);
      for (const id of [b.installationId, b.policyId, b.userId, b.keyId, b.digestKeyId, b.apiTokenId]) if (c.path.includes(id) && text.includes("Globex")) failures.push(`${route} shows B's name`);
    }
    expect(failures).toEqual([]);
    expect(await snapshot(cp, b)).toBe(before);
    void a;
  });
});
