// The tables of the directory: service users, groups, memberships, remote identities. Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { installations } from "../installations/tables.ts";
import { organizations } from "../organizations/tables.ts";

/** Service users: the identities decisions are made and audited under; keyed by email per org. */
export const users = table(
  "users",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    email: c.text("email").notNull(),
    displayName: c.text("display_name"),
    disabled: c.bool("disabled").notNull().default(false),
    source: c.text("source", { enum: ["manual", "directory", "claim"] }).notNull(),
    externalId: c.text("external_id"),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.uniqueIndex("users_org_email").on(t.orgId, t.email)],
);

export const groups = table(
  "groups",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    name: c.text("name").notNull(),
    source: c.text("source", { enum: ["manual", "directory"] }).notNull(),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.uniqueIndex("groups_org_name").on(t.orgId, t.name)],
);

export const groupMembers = table(
  "group_members",
  (c) => ({
    groupId: c
      .text("group_id")
      .notNull()
      .references(() => groups.id),
    userId: c
      .text("user_id")
      .notNull()
      .references(() => users.id),
    source: c.text("source", { enum: ["manual", "directory"] }).notNull(),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.primaryKey({ columns: [t.groupId, t.userId] }), c.index("group_members_user").on(t.userId)],
);

/** A front-end user (`chatui`, front-end user id), linked or not to a service user. */
export const remoteIdentities = table(
  "remote_identities",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    platform: c.text("platform", { enum: ["chatui"] }).notNull(),
    remoteUserId: c.text("remote_user_id").notNull(),
    installationId: c.text("installation_id").references(() => installations.id),
    email: c.text("email"),
    displayName: c.text("display_name"),
    userId: c.text("user_id").references(() => users.id),
    linkedAt: c.millis("linked_at"),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.uniqueIndex("remote_identities_key").on(t.orgId, t.platform, t.remoteUserId), c.index("remote_identities_user").on(t.userId)],
);
