// Rotating an organization's checkpoint-signing key (an owner's act, `svc audit signing-key
// rotate`). One transaction: the admin event (in the admin store chain), then a checkpoint
// signed by the OLD key that signs every head, that event's included, and names the new key
// (`next_key`), then the new key stored. A verifier holding the old pin trusts that hand-over
// because the old key signed it, and pins the new key (contract/verify/checkpoint-trust.ts);
// a key replaced in the store without one is refused. A refused attempt is an admin event too.
import { SvcError } from "../../contract/errors.ts";
import { actorOf, recordAdminEvent, recordedRefusal } from "../audit/admin-events.ts";
import type { Principal } from "../auth/service.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { rememberCheckpoint, signCheckpoint } from "./checkpoints.ts";
import { currentSigningKey, ensureSigningKey, fingerprintOf, newSigningKey, storeSigningKey } from "./signing-key.ts";

const keyView = (publicKey: string) => ({ public_key: publicKey, fingerprint: fingerprintOf(publicKey) });

/** The organization's key as verifiers should pin it (made the first time). */
export async function signingKeyView(deps: ControlPlaneDeps, orgId: string) {
  const key = await ensureSigningKey(deps, orgId);
  return { ...keyView(key.publicKey), created_at: new Date(key.createdAt).toISOString() };
}

export async function rotateSigningKey(deps: ControlPlaneDeps, by: Principal) {
  const orgId = by.orgId;
  const target = { type: "audit_signing_key", id: orgId, name: null };
  if (by.role !== "owner") {
    const eventId = await deps.db.transaction(async (tx) =>
      recordAdminEvent(
        tx,
        {
          orgId,
          action: "signing_key.rotate",
          actor: actorOf(by),
          target,
          result: "refused",
          status: 403,
          code: "forbidden",
          reason: `${by.email ?? by.accountId} may not rotate the audit signing key: only an owner may`,
        },
        deps.now(),
      ),
    );
    throw recordedRefusal(new SvcError("forbidden", `only an owner can rotate the audit signing key; role "${by.role}" cannot`), eventId);
  }
  await ensureSigningKey(deps, orgId);
  // KMS work outside the transaction; a transaction run again hands over to the same new key.
  const fresh = newSigningKey(deps.kms, orgId);
  const now = deps.now();
  const rotated = await deps.db.transaction(async (tx) => {
    const old = (await currentSigningKey(tx, deps.kms, orgId, deps.log))!;
    await recordAdminEvent(
      tx,
      {
        orgId,
        action: "signing_key.rotate",
        actor: actorOf(by),
        target,
        before: keyView(old.publicKey),
        after: keyView(fresh.publicKey),
        severity: "high",
        reason: `${by.email ?? by.accountId} rotated the audit checkpoint-signing key from ${fingerprintOf(old.publicKey)} to ${fingerprintOf(fresh.publicKey)}`,
      },
      now,
    );
    const { checkpoint } = await signCheckpoint(tx, orgId, old, { force: true, nextKey: fresh.publicKey, now, store: deps.db });
    await storeSigningKey(tx, orgId, fresh, now);
    return { checkpoint: checkpoint!, view: { ...keyView(fresh.publicKey), created_at: new Date(now).toISOString(), handover_checkpoint: checkpoint!.number } };
  });
  rememberCheckpoint(deps.db, orgId, rotated.checkpoint);
  return rotated.view;
}
