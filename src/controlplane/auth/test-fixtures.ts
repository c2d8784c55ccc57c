// Test fixtures for the admin API: more accounts, a console session, a second organization,
// and runtime replicas with real age credential-sync keys. Used by *.test.ts files only.
import { eq } from "drizzle-orm";
import { Encrypter, generateX25519Identity, identityToRecipient } from "age-encryption";
import { newId } from "../../contract/ids.ts";
import { tables } from "../db/index.ts";
import type { TestControlPlane } from "../testing.ts";
import { bootstrapOwner } from "./bootstrap.ts";
import { type Role, addMembership, createAccount } from "./service.ts";
import { issueApiToken } from "./api-tokens.ts";
import { actingAsSystem } from "../audit/admin-events.ts";

export const PASSWORD = "correct horse battery staple";

/**
 * An account with `role` in the test organization, and an API token for it issued from a
 * sign-in now. `by`: the account that added it (default: none, as bootstrap adds the first owner).
 */
export async function accountWithRole(cp: TestControlPlane, role: Role, email = `${role}-${Math.random().toString(36).slice(2)}@example.com`, by: string | null = null) {
  const account = await createAccount(cp.deps.db, { email, password: PASSWORD });
  await addMembership(cp.deps.db, account.id, cp.orgId, role, { by, join: by ? "created" : "bootstrap", at: cp.deps.now() });
  const { token } = await issueApiToken(cp.deps, { accountId: account.id, orgId: cp.orgId, name: "test", signIn: { at: cp.deps.now() } }, actingAsSystem(cp.deps, "controlplane"));
  return { accountId: account.id, email, token };
}

/** Signs in through the API; returns the cookie header value and the CSRF token. */
export async function signInSession(cp: TestControlPlane, email = "owner@example.com", password = PASSWORD) {
  const res = await cp.call("POST", "/api/v1/auth/sessions", { body: { email, password }, token: null });
  if (res.status !== 200) throw new Error(`sign-in failed: ${res.status} ${res.text}`);
  const setCookie = res.headers.get("set-cookie") ?? "";
  const cookie = setCookie.split(";")[0]!;
  return { cookie, csrf: res.json.csrf_token as string, setCookie, body: res.json };
}

/** A second organization with its own owner and token. */
export async function secondOrganization(cp: TestControlPlane) {
  const other = await bootstrapOwner(cp.deps, { email: "other-owner@example.org", orgName: "Globex", password: PASSWORD, withToken: true });
  return { orgId: other.orgId, workspaceId: other.workspaceId, token: other.token!, org: (p: string) => `/api/v1/organizations/${other.orgId}${p}` };
}

/** A bootstrapped runtime replica of an installation, with a real X25519 credential-sync key. */
export async function fakeReplica(cp: TestControlPlane, installationId: string) {
  const identity = await generateX25519Identity();
  const recipient = await identityToRecipient(identity);
  const id = newId("replica");
  await cp.deps.db
    .insert(tables(cp.deps.db).runtimeReplicas)
    .values({ id, installationId, credentialSyncRecipient: recipient, bootstrappedAt: cp.deps.now(), state: "ready", policyRevision: 3, toolCount: 2, spoolDepth: 0, version: "0.1.30" });
  return { id, recipient, identity };
}

/** An API key sealed to the given recipients, as the CLI sends it: base64 of the age file. */
export async function sealKey(recipients: string[], key = "sk-test-123") {
  const e = new Encrypter();
  for (const r of recipients) e.addRecipient(r);
  return Buffer.from(await e.encrypt(key)).toString("base64");
}

export async function revisionOf(cp: TestControlPlane, orgId = cp.orgId): Promise<number> {
  const o = tables(cp.deps.db).organizations;
  const [row] = await cp.deps.db.select().from(o).where(eq(o.id, orgId));
  return row!.revision;
}

/** A workspace, an agent in it, and (optionally) an installation bound to the agent. */
export async function agentAndInstallation(cp: TestControlPlane, workspace = "default", name = `agent-${Math.random().toString(36).slice(2, 8)}`) {
  const agent = await cp.call("POST", cp.org("/agents"), { body: { name, workspace } });
  if (agent.status !== 201) throw new Error(`agent: ${agent.status} ${agent.text}`);
  const inst = await cp.call("POST", cp.org("/installations"), { body: { platform: "chatui", name: `${name}-bot`, agent_id: agent.json.id, workspace } });
  if (inst.status !== 201) throw new Error(`installation: ${inst.status} ${inst.text}`);
  return { agentId: agent.json.id as string, installationId: inst.json.id as string };
}
