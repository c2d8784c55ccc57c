// The two database edges of directory sync: reading the organization's users, groups and
// memberships as plan() wants them, and applying plan()'s changes through the directory
// folder's service functions. Both are synchronous so they run inside one bun:sqlite
// transaction (an await inside drizzle's transaction would commit early).
import { eq } from "drizzle-orm";
import { type Db, schema } from "../db/index.ts";
import { addGroupMember, ensureGroup, findUserByEmail, removeGroupMember, setUserDisabled, upsertUserByEmail } from "../directory/service.ts";
import type { Change, DirectoryState } from "./plan.ts";

/** The organization's users, groups and memberships (with their source). */
export function readDirectoryState(db: Db, orgId: string): DirectoryState {
  const u = schema.users;
  const g = schema.groups;
  const gm = schema.groupMembers;
  const users = db
    .select({ id: u.id, email: u.email, displayName: u.displayName, disabled: u.disabled, source: u.source, externalId: u.externalId })
    .from(u)
    .where(eq(u.orgId, orgId))
    .all();
  const groups = db.select({ id: g.id, name: g.name, source: g.source }).from(g).where(eq(g.orgId, orgId)).all();
  const memberships = db
    .select({ groupName: g.name, userId: gm.userId, source: gm.source })
    .from(gm)
    .innerJoin(g, eq(g.id, gm.groupId))
    .where(eq(g.orgId, orgId))
    .all();
  return { users, groups, memberships };
}

/** Applies changes in order; call inside a transaction. skip_user changes are report-only. */
export function applyChanges(db: Db, orgId: string, changes: Change[]): void {
  const groupId = (name: string) => ensureGroup(db, orgId, name, "directory").group.id;
  const userId = (email: string, id: string | null) => {
    if (id) return id;
    const user = findUserByEmail(db, orgId, email);
    if (!user) throw new Error(`directory sync: user ${email} vanished while applying`);
    return user.id;
  };
  for (const c of changes) {
    switch (c.kind) {
      case "create_group":
        groupId(c.group);
        break;
      case "create_user":
        upsertUserByEmail(db, orgId, { email: c.email, displayName: c.display_name, source: "directory", externalId: c.external_id });
        break;
      case "enable_user":
        setUserDisabled(db, orgId, c.user_id, false);
        break;
      case "disable_user":
        setUserDisabled(db, orgId, c.user_id, true);
        break;
      case "add_member":
        addGroupMember(db, orgId, groupId(c.group), userId(c.email, c.user_id), "directory");
        break;
      case "remove_member":
        removeGroupMember(db, orgId, groupId(c.group), c.user_id);
        break;
      case "skip_user":
        break;
    }
  }
}
