// Tamper-evidence routes under /organizations/{org}: the signed checkpoints with the
// organization's public key (what `svc audit verify` checks records against), making a
// checkpoint now, the signing key and its rotation, the control plane's own verification of
// its store, and the continuity problems seen at ingest.
import { Elysia } from "elysia";
import { ChainFlagList, Checkpoint, CheckpointList, SigningKey, StoreVerification } from "../../contract/admin-api.ts";
import { actorOf } from "../audit/admin-events.ts";
import { authPlugin } from "../auth/plugin.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { listCheckpoints, makeCheckpoint } from "./checkpoints.ts";
import { rotateSigningKey, signingKeyView } from "./rotation.ts";
import { listFlags } from "./service.ts";
import { latestVerification, startVerification } from "./verify-store.ts";

export function auditChainRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "audit-chain-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .get("/audit-checkpoints", async ({ principal }) => listCheckpoints(deps, principal.orgId), {
      admin: true,
      response: CheckpointList,
      detail: { summary: "Every signed checkpoint, oldest first, the organization's Ed25519 public key (derived from the private key it signs with) and when the next is due", tags: ["audit"] },
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
    .get("/audit-signing-key", async ({ principal }) => signingKeyView(deps, principal.orgId), {
      admin: true,
      response: SigningKey,
      detail: { summary: "The checkpoint-signing key to pin (public key and fingerprint)", tags: ["audit"] },
    })
    .post("/audit-signing-key/rotate", async ({ principal }) => rotateSigningKey(deps, principal), {
      admin: true,
      response: SigningKey,
      detail: { summary: "Rotate the checkpoint-signing key (owners): a checkpoint signed by the old key hands over to the new one; an admin event", tags: ["audit"] },
    })
    .post(
      "/audit-verifications",
      async ({ principal, set }) => {
        set.status = 202;
        return startVerification(deps, principal.orgId, actorOf(principal));
      },
      {
        admin: true,
        response: { 202: StoreVerification },
        detail: { summary: "Verify the organization's store with the control plane's own key, in the background (bounded slices)", tags: ["audit"] },
      },
    )
    .get("/audit-verifications/latest", async ({ principal }) => latestVerification(deps.db, principal.orgId), {
      admin: true,
      response: { 200: StoreVerification },
      detail: { summary: "The latest verification the control plane ran of its own store (404 before the first)", tags: ["audit"] },
    })
    .get("/audit-chain-flags", async ({ principal }) => ({ flags: await listFlags(deps.db, principal.orgId) }), {
      admin: true,
      response: ChainFlagList,
      detail: { summary: "Gaps, forks and late records seen at ingest, newest first", tags: ["audit"] },
    });
}
