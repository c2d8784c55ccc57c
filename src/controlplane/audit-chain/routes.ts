// Tamper-evidence routes under /organizations/{org}: the signed checkpoints with the
// organization's public key (what `svc audit verify` checks records against), making a
// checkpoint now, and the continuity problems seen at ingest.
import { Elysia } from "elysia";
import { ChainFlagList, Checkpoint, CheckpointList } from "../../contract/admin-api.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { listCheckpoints, listFlags, makeCheckpoint } from "./service.ts";

export function auditChainRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "audit-chain-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .get("/audit-checkpoints", async ({ principal }) => listCheckpoints(deps.db, principal.orgId), {
      admin: true,
      response: CheckpointList,
      detail: { summary: "Every signed checkpoint, oldest first, and the organization's Ed25519 public key", tags: ["audit"] },
    })
    .post(
      "/audit-checkpoints",
      async ({ principal, set }) => {
        const { checkpoint, created } = await makeCheckpoint(deps, principal.orgId, { force: true });
        set.status = created ? 201 : 200;
        // forced, so there is always one (a first, empty checkpoint when nothing is chained yet)
        return checkpoint!;
      },
      { admin: true, response: { 200: Checkpoint, 201: Checkpoint }, detail: { summary: "Sign the chain heads now as the next checkpoint (besides the periodic ones)", tags: ["audit"] } },
    )
    .get("/audit-chain-flags", async ({ principal }) => ({ flags: await listFlags(deps.db, principal.orgId) }), {
      admin: true,
      response: ChainFlagList,
      detail: { summary: "Gaps, forks and late records seen at ingest, newest first", tags: ["audit"] },
    });
}
