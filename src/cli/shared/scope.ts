// Looking up the workspace and model profile an admin names on the command line (by id or by
// name), so commands can check that the objects they touch are in the workspace the admin meant.
import type { ModelProfile, Workspace } from "../../contract/admin-api.ts";
import type { OrgClient } from "./client.ts";

export type { ModelProfile, Workspace } from "../../contract/admin-api.ts";

/** The workspace named by id or name; a failure naming the known workspaces when absent. */
export async function findWorkspace(client: OrgClient, ref: string): Promise<Workspace> {
  const { workspaces } = await client.json<{ workspaces: Workspace[] }>("GET", client.org("/workspaces"));
  const ws = (workspaces ?? []).find((w) => w.id === ref || w.name === ref);
  if (!ws) {
    const known = (workspaces ?? []).map((w) => w.name).join(", ") || "none";
    throw client.fail(`workspace "${ref}" does not exist in this organization (known: ${known}); pass --workspace with one of them`, "workspace_not_found");
  }
  return ws;
}

export function inWorkspace(ws: Workspace, workspaceId: unknown): boolean {
  return workspaceId === undefined || workspaceId === null || workspaceId === ws.id;
}

/** A model profile of the workspace, by id or display name. */
export async function findModelProfile(client: OrgClient, ref: string, workspace: string): Promise<{ profile: ModelProfile; workspace: Workspace }> {
  const ws = await findWorkspace(client, workspace);
  const { model_profiles } = await client.json<{ model_profiles: ModelProfile[] }>("GET", client.org("/model-profiles"), { query: { workspace: ws.id } });
  const matches = (model_profiles ?? []).filter((p) => (p.id === ref || p.display_name === ref) && inWorkspace(ws, p.workspace_id));
  if (matches.length === 0) {
    throw client.fail(`no model profile "${ref}" in workspace ${ws.name}; list the workspace's profiles with \`svc model-profiles list --workspace ${ws.name}\``, "not_found");
  }
  if (matches.length > 1) {
    throw client.fail(`${matches.length} model profiles in workspace ${ws.name} are named "${ref}"; pass the profile id (mp_…) instead`, "conflict");
  }
  return { profile: matches[0]!, workspace: ws };
}

/**
 * `--workspace` on a command that names a policy by id (`svc policies update|delete`): the
 * policy must be one of that workspace's, or the command changes nothing and says where it is.
 */
export async function requirePolicyInWorkspace(client: OrgClient, policyId: string, workspace: string): Promise<void> {
  const ws = await findWorkspace(client, workspace);
  const { policies } = await client.json<{ policies: Array<{ id: string }> }>("GET", client.org("/policies"), { query: { workspace: ws.id } });
  if ((policies ?? []).some((p) => p.id === policyId)) return;
  throw client.fail(`policy ${policyId} is not in workspace ${ws.name}; nothing was changed (list that workspace's policies with \`svc policies list --workspace ${ws.name}\`)`, "not_found");
}

/** The installations of a workspace (id and name), for commands that pick one within it. */
export async function installationsOf(client: OrgClient, workspace: string): Promise<{ workspace: Workspace; installations: Array<{ id: string; name: string }> }> {
  const ws = await findWorkspace(client, workspace);
  const { installations } = await client.json<{ installations: Array<{ id: string; name: string }> }>("GET", client.org("/installations"), { query: { workspace: ws.id } });
  return { workspace: ws, installations: installations ?? [] };
}
