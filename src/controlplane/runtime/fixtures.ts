// Test fixtures for the runtime API and the folders it feeds (bundle, audit, keys, claims):
// agents and installations written straight to the database (the admin routes for them are
// another folder's), runtime tokens, valid age recipients, and audit records.
import { generateX25519Identity, identityToRecipient } from "age-encryption";
import type { AuditRecord } from "../../contract/audit.ts";
import { newId } from "../../contract/ids.ts";
import { bootstrapOwner } from "../auth/bootstrap.ts";
import { hashSecret, newSecret } from "../auth/tokens.ts";
import { tables } from "../db/index.ts";
import type { TestControlPlane } from "../testing.ts";

export type Installation = { orgId: string; workspaceId: string; agentId: string; installationId: string; name: string; token: string };

/** An agent and a chatui installation with a freshly issued runtime token. */
export async function addInstallation(cp: TestControlPlane, opts: { name?: string; orgId?: string; workspaceId?: string; agentId?: string } = {}): Promise<Installation> {
  const orgId = opts.orgId ?? cp.orgId;
  const workspaceId = opts.workspaceId ?? cp.workspaceId;
  const agentId = opts.agentId ?? newId("agent");
  if (!opts.agentId) await cp.deps.db.insert(tables(cp.deps.db).agents).values({ id: agentId, orgId, workspaceId, name: `agent-${agentId.slice(-6)}` });
  const installationId = newId("installation");
  const token = newSecret("runtime");
  const name = opts.name ?? `chat-${installationId.slice(-6)}`;
  await cp.deps.db
    .insert(tables(cp.deps.db).installations)
    .values({ id: installationId, orgId, workspaceId, agentId, name, platform: "chatui", tokenHash: hashSecret(token), tokenIssuedAt: cp.deps.now() });
  return { orgId, workspaceId, agentId, installationId, name, token };
}

/** A second organization with its own owner token. */
export async function addOrganization(cp: TestControlPlane, email = "other-owner@example.org") {
  const o = await bootstrapOwner(cp.deps, { email, orgName: "Other", password: "another long password here", withToken: true });
  return { orgId: o.orgId, workspaceId: o.workspaceId, adminToken: o.token!, org: (path: string) => `/api/v1/organizations/${o.orgId}${path}` };
}

export async function newRecipient(): Promise<{ identity: string; recipient: string }> {
  const identity = await generateX25519Identity();
  return { identity, recipient: await identityToRecipient(identity) };
}

export function bootstrapBody(recipient: string, replicaId = newId("replica")) {
  return { replica_id: replicaId, credential_sync_recipient: recipient, version: "0.1.30", hostname: "pod-1" };
}

/** A digest-only tool decision record of the installation; override anything. Its id is time-ordered by `ts`. */
export function auditRecord(inst: Installation, over: Partial<AuditRecord> = {}): AuditRecord {
  const ts = over.ts ?? new Date().toISOString();
  return {
    id: newId("auditRecord", Date.parse(ts)),
    ts,
    kind: "tool",
    harness: "chatui",
    organization_id: inst.orgId,
    workspace_id: inst.workspaceId,
    installation_id: inst.installationId,
    agent_id: inst.agentId,
    action: "tool:crm.lookup",
    tool_name: "crm.lookup",
    decision: "permit",
    reason: "policy",
    policy_revision: 1,
    subject: { user_id: null, remote_user_id: "fe-user-1", via_installation: false },
    args_digest: `hmac-sha256:${"ab".repeat(32)}`,
    digest_key_id: "dk_TEST",
    recipient_key_ids: [],
    ciphertext: null,
    ...over,
  };
}
