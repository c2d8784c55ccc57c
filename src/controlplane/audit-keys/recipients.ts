// Who new audit records are encrypted to: every active customer key, plus the service's
// escrow recipient while escrow is on AND at least one customer key is active (spec §3, §8).
// With no active customer key the list is empty and records are digest-only.
import type { BundleRecipient } from "../../contract/bundle.ts";
import type { Db } from "../db/index.ts";
import { enabledEscrowRecipient } from "../escrow/identity.ts";
import { activeKeys } from "./service.ts";

/** The pure rule, on plain inputs. */
export function effectiveRecipients(customer: Array<{ id: string; publicKey: string }>, escrow: { id: string; recipient: string } | null): BundleRecipient[] {
  if (customer.length === 0) return [];
  const out: BundleRecipient[] = customer.map((k) => ({ key_id: k.id, recipient: k.publicKey, kind: "customer" }));
  if (escrow) out.push({ key_id: escrow.id, recipient: escrow.recipient, kind: "escrow" });
  return out;
}

/** The recipients now; pass a transaction's `tx` to read them in the same snapshot as other reads. */
export async function recipientsFor(db: Db, orgId: string): Promise<BundleRecipient[]> {
  return effectiveRecipients(await activeKeys(db, orgId), await enabledEscrowRecipient(db, orgId));
}
