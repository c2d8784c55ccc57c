// The table of claim links. Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { installations } from "../installations/tables.ts";
import { organizations } from "../organizations/tables.ts";

export const claimLinks = table("claim_links", (c) => ({
  id: c.text("id").primaryKey(),
  orgId: c
    .text("org_id")
    .notNull()
    .references(() => organizations.id),
  installationId: c
    .text("installation_id")
    .notNull()
    .references(() => installations.id),
  remoteUserId: c.text("remote_user_id").notNull(),
  tokenHash: c.text("token_hash").notNull().unique(),
  /** The token wrapped by the KMS, so a live link can be handed out again instead of a new one. */
  tokenSealed: c.text("token_sealed"),
  expiresAt: c.millis("expires_at").notNull(),
  usedAt: c.millis("used_at"),
  usedByUserId: c.text("used_by_user_id"),
  createdAt: c.createdAt(),
}));
