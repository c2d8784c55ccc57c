// The bundle loader: reads what one installation's bundle is made of (its tools, its agent's
// policies, only its own identities plus those an admin linked without an installation),
// through the owning folders' service functions, and hands it to the pure compiler.
// `orgRevision` is the one cheap query the If-None-Match path needs, so a 304 costs no compilation.
import type { BundleTool, BundleVersion, PolicyBundle } from "../../contract/bundle.ts";
import { recipientsFor } from "../audit-keys/recipients.ts";
import type { Db } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { disabledIdentities, identityMap } from "../directory/service.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";
import { profileForAgent } from "../model-profiles/service.ts";
import { currentDigestKeyId } from "../organizations/digest-keys.ts";
import { getOrganization } from "../organizations/service.ts";
import { policiesForAgent } from "../policies/service.ts";
import { toolsOfInstallation } from "../tools/lookup.ts";
import { mcpToolsForAgent } from "../tool-servers/catalogue.ts";
import { currentAssertionKeyId } from "../assertion-keys/service.ts";
import { serversForAgent } from "../tool-servers/service.ts";
import { expressibleFeatures } from "../replicas/service.ts";
import { bundleTools, compileBundle } from "./compile.ts";

/**
 * Reads and compiles an installation's bundle in one read transaction, so the revision it
 * carries matches its content even while admins write.
 */
export async function loadBundle(deps: ControlPlaneDeps, caller: RuntimeCaller, version: BundleVersion, conditions = false): Promise<PolicyBundle> {
  // What every live control-plane replica can express (a rolling upgrade narrows it, issue 29).
  const expressible = conditions ? expressibleFeatures(deps).features : new Set<string>();
  return deps.db.transaction(async (tx) => {
    const toolServers = await serversForAgent(tx, caller.agentId);
    return compileBundle({
      version,
      revision: (await getOrganization(tx, caller.orgId)).revision,
      generatedAt: deps.now(),
      organizationId: caller.orgId,
      workspaceId: caller.workspaceId,
      installationId: caller.installationId,
      agentId: caller.agentId,
      tools: await toolsOfInstallation(tx, caller.installationId),
      mcpTools: await mcpToolsForAgent(tx, caller, toolServers),
      policies: await policiesForAgent(tx, caller.workspaceId, caller.agentId),
      identities: await identityMap(tx, caller.orgId, caller.installationId),
      disabledIdentities: await disabledIdentities(tx, caller.orgId, caller.installationId),
      modelProfile: await profileForAgent(tx, caller.agentId),
      recipients: await recipientsFor(tx, caller.orgId),
      toolServers,
      digestKeyId: await currentDigestKeyId(tx, caller.orgId),
      assertionKeyId: toolServers.some((s) => s.assertion) ? await currentAssertionKeyId(tx, caller.orgId) : null,
      conditions,
      expressible,
    });
  });
}

/**
 * The tools an installation's bundle carries, as its proxies serve them: its packs' tools and
 * its agent's MCP tools (with their server and upstream name; a pack's tool of the same name
 * wins). `GET …/installations/{id}/tools`, `svc bot status --tools` (issue 31).
 */
export async function installationTools(db: Db, inst: { id: string; workspaceId: string; agentId: string }): Promise<BundleTool[]> {
  return db.transaction(async (tx) => {
    const servers = await serversForAgent(tx, inst.agentId);
    return bundleTools(await toolsOfInstallation(tx, inst.id), await mcpToolsForAgent(tx, { workspaceId: inst.workspaceId, agentId: inst.agentId }, servers));
  });
}
