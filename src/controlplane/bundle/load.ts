// The bundle loader: reads what one installation's bundle is made of (its tools, its agent's
// policies, only its own identities plus those an admin linked without an installation),
// through the owning folders' service functions, and hands it to the pure compiler.
// `orgRevision` is the one cheap query the If-None-Match path needs, so a 304 costs no compilation.
import type { BundleVersion, PolicyBundle } from "../../contract/bundle.ts";
import { recipientsFor } from "../audit-keys/recipients.ts";
import { eq, sql } from "drizzle-orm";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { identityMap } from "../directory/service.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";
import { profileForAgent } from "../model-profiles/service.ts";
import { policiesForAgent } from "../policies/service.ts";
import { toolsOfInstallation } from "../runtime/tools.ts";
import { serversForAgent } from "../tool-servers/service.ts";
import { compileBundle } from "./compile.ts";

const revisionQueries = new WeakMap<Db, ReturnType<typeof prepareRevision>>();

function prepareRevision(db: Db) {
  const o = tables(db).organizations;
  return db.select({ revision: o.revision }).from(o).where(eq(o.id, sql.placeholder("org"))).prepare("org_revision");
}

/** The organization's bundle revision (the ETag), by a query built once per database. */
export async function orgRevision(db: Db, orgId: string): Promise<number> {
  let query = revisionQueries.get(db);
  if (!query) revisionQueries.set(db, (query = prepareRevision(db)));
  const [row] = await query.execute({ org: orgId });
  return row?.revision ?? 0;
}

/**
 * Reads and compiles an installation's bundle in one read transaction, so the revision it
 * carries matches its content even while admins write.
 */
export async function loadBundle(deps: ControlPlaneDeps, caller: RuntimeCaller, version: BundleVersion): Promise<PolicyBundle> {
  return deps.db.transaction(async (tx) => {
    const o = tables(tx).organizations;
    const [org] = await tx.select({ revision: o.revision }).from(o).where(eq(o.id, caller.orgId));
    return compileBundle({
      version,
      revision: org?.revision ?? 0,
      generatedAt: deps.now(),
      organizationId: caller.orgId,
      workspaceId: caller.workspaceId,
      installationId: caller.installationId,
      agentId: caller.agentId,
      tools: await toolsOfInstallation(tx, caller.installationId),
      policies: await policiesForAgent(tx, caller.workspaceId, caller.agentId),
      identities: await identityMap(tx, caller.orgId, caller.installationId),
      modelProfile: await profileForAgent(tx, caller.agentId),
      recipients: await recipientsFor(tx, caller.orgId),
      toolServers: await serversForAgent(tx, caller.agentId),
    });
  });
}
