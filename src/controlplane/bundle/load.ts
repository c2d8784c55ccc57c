// The bundle loader: reads what one installation's bundle is made of (its tools, its agent's
// policies, only its own identities plus those an admin linked without an installation),
// through the owning folders' service functions, and hands it to the pure compiler.
// `orgRevision` is the one cheap query the If-None-Match path needs, so a 304 costs no compilation.
import type { BundleVersion, PolicyBundle } from "../../contract/bundle.ts";
import { recipientsFor } from "../audit-keys/recipients.ts";
import type { Db } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { identityMap } from "../directory/service.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";
import { profileForAgent } from "../model-profiles/service.ts";
import { policiesForAgent } from "../policies/service.ts";
import { toolsOfInstallation } from "../runtime/tools.ts";
import { compileBundle } from "./compile.ts";

/** The organization's bundle revision (the ETag), by a cached prepared statement. */
export function orgRevision(db: Db, orgId: string): number {
  const row = db.$client.query<{ revision: number }, [string]>("SELECT revision FROM organizations WHERE id = ?").get(orgId);
  return row?.revision ?? 0;
}

/**
 * Reads and compiles an installation's bundle in one read transaction, so the revision it
 * carries matches its content even while admins write.
 */
export function loadBundle(deps: ControlPlaneDeps, caller: RuntimeCaller, version: BundleVersion): PolicyBundle {
  return deps.db.transaction(
    (tx) => {
      const db = tx as unknown as Db;
      return compileBundle({
        version,
        revision: orgRevision(deps.db, caller.orgId),
        generatedAt: deps.now(),
        organizationId: caller.orgId,
        workspaceId: caller.workspaceId,
        installationId: caller.installationId,
        agentId: caller.agentId,
        tools: toolsOfInstallation(db, caller.installationId),
        policies: policiesForAgent(db, caller.workspaceId, caller.agentId),
        identities: identityMap(db, caller.orgId, caller.installationId),
        modelProfile: profileForAgent(db, caller.agentId),
        recipients: recipientsFor(db, caller.orgId),
      });
    },
    { behavior: "deferred" },
  );
}
