// The two database edges of directory sync: reading the organization's users, groups and
// memberships as plan() wants them, and applying plan()'s changes through the directory
// folder's service functions. The run calls both with the same transaction's `tx`, so the
// plan is made from, and applied to, one consistent state, and a run's changes land whole.
import type { Db } from "../db/index.ts";
import { addGroupMember, directoryState, ensureGroup, findUserByEmail, removeGroupMember, setUserDisabled, upsertUserByEmail } from "../directory/service.ts";
import type { Change, DirectoryState } from "./plan.ts";

/** The organization's users, groups and memberships (with their source), from the directory folder. */
export async function readDirectoryState(db: Db, orgId: string): Promise<DirectoryState> {
  return directoryState(db, orgId);
}

/** Applies changes in order; call inside a transaction. skip_user changes are report-only. */
export async function applyChanges(db: Db, orgId: string, changes: Change[]): Promise<void> {
  const groupId = async (name: string) => (await ensureGroup(db, orgId, name, "directory")).group.id;
  const userId = async (email: string, id: string | null) => {
    if (id) return id;
    const user = await findUserByEmail(db, orgId, email);
    if (!user) throw new Error(`directory sync: user ${email} vanished while applying`);
    return user.id;
  };
  for (const c of changes) {
    switch (c.kind) {
      case "create_group":
        await groupId(c.group);
        break;
      case "create_user":
        await upsertUserByEmail(db, orgId, { email: c.email, displayName: c.display_name, source: "directory", externalId: c.external_id });
        break;
      case "enable_user":
        await setUserDisabled(db, orgId, c.user_id, false);
        break;
      case "disable_user":
        await setUserDisabled(db, orgId, c.user_id, true);
        break;
      case "add_member":
        await addGroupMember(db, orgId, await groupId(c.group), await userId(c.email, c.user_id), "directory");
        break;
      case "remove_member":
        await removeGroupMember(db, orgId, await groupId(c.group), c.user_id);
        break;
      case "skip_user":
        break;
    }
  }
}
