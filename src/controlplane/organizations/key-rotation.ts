// What every rotation of one of the organization's keys (the audit digest key, the
// identity-assertion key) writes in its own transaction, beside the new key row: the revision
// bump that makes every runtime's next bundle poll (about a minute) fetch the new key, and a
// high-severity admin event that names the key ids, never key material.
import type { AdminAction, AdminTarget } from "../../contract/admin-event.ts";
import { actorOf, recordAdminEvent } from "../audit/admin-events.ts";
import type { Principal } from "../auth/principal.ts";
import type { Db } from "../db/index.ts";
import { bumpRevision } from "./revision.ts";

export type KeyRotation = {
  action: AdminAction;
  targetType: AdminTarget["type"];
  /** The new current key's id. */
  current: string;
  /** The key that was current before; null when the organization had none. */
  previous: string | null;
  /** More of the event's `after` beside `current` (what became of the previous key). */
  after?: Record<string, unknown>;
  reason: string;
};

export async function recordKeyRotation(tx: Db, by: Principal, r: KeyRotation, at: number): Promise<void> {
  await bumpRevision(tx, by.orgId);
  await recordAdminEvent(
    tx,
    {
      orgId: by.orgId,
      action: r.action,
      actor: actorOf(by),
      target: { type: r.targetType, id: r.current },
      before: { current: r.previous },
      after: { current: r.current, ...r.after },
      severity: "high",
      reason: r.reason,
    },
    at,
  );
}
