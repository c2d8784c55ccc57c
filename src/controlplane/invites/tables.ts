// Chat invites: a one-time link an admin gives a chat user who has no console account, to set a
// chat password. The password only redeems claim links (it opens no console session). Declared
// once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { users } from "../directory/tables.ts";
import { organizations } from "../organizations/tables.ts";

export const chatInvites = table("chat_invites", (c) => ({
  id: c.text("id").primaryKey(),
  orgId: c
    .text("org_id")
    .notNull()
    .references(() => organizations.id),
  userId: c
    .text("user_id")
    .notNull()
    .references(() => users.id),
  tokenHash: c.text("token_hash").notNull().unique(),
  expiresAt: c.millis("expires_at").notNull(),
  usedAt: c.millis("used_at"),
  createdAt: c.createdAt(),
}));

/** A service user's chat password (argon2id): good for redeeming claim links only. */
export const chatPasswords = table("chat_passwords", (c) => ({
  userId: c
    .text("user_id")
    .primaryKey()
    .references(() => users.id),
  passwordHash: c.text("password_hash").notNull(),
  updatedAt: c.millis("updated_at").notNull(),
}));
