// The organization's members: accounts with a role (owner, admin, member). Accounts are
// global (one per email); adding a member creates the account when it is new. Only an owner
// hands out or takes away the owner role, and the last owner cannot be demoted.
// Adding an account that already exists (maybe a member elsewhere) needs no consent because it
// grants nothing outside this organization: the account keeps its own password (refused here),
// and a session opened by this organization's single sign-on is bound to this organization
// (auth/service.ts `sessionAuthenticatedFor`), so it cannot switch to, or redeem claim links
// of, the account's other organizations.
// Removing a member ends the account's access to this organization at once: its sessions here
// are deleted and its API tokens here revoked; the account and its other memberships stay.
import { and, eq } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { EMAIL_RE } from "../auth/bootstrap.ts";
import { type Principal, type Role, addMembership, createAccount, endAccountAccess, findAccountByEmail, membership } from "../auth/service.ts";
import { type Db, schema } from "../db/index.ts";

export const MIN_PASSWORD_LENGTH = 12;

export type Member = { account_id: string; email: string; role: Role };

export function listMembers(db: Db, orgId: string): Member[] {
  return db
    .select({ account_id: schema.accounts.id, email: schema.accounts.email, role: schema.memberships.role })
    .from(schema.memberships)
    .innerJoin(schema.accounts, eq(schema.accounts.id, schema.memberships.accountId))
    .where(eq(schema.memberships.orgId, orgId))
    .orderBy(schema.accounts.email)
    .all();
}

function ownerCount(db: Db, orgId: string): number {
  return db
    .select({ accountId: schema.memberships.accountId })
    .from(schema.memberships)
    .where(and(eq(schema.memberships.orgId, orgId), eq(schema.memberships.role, "owner")))
    .all().length;
}

/** Adds an account to the organization with a role, or changes the role of an existing member. */
export async function addMember(db: Db, by: Principal, input: { email: string; role: Role; password?: string }): Promise<Member> {
  const email = input.email.trim().toLowerCase();
  if (!EMAIL_RE.test(email)) throw new SvcError("validation_failed", `"${input.email}" is not an email address`, { errors: [{ path: "/email", message: "not an email address" }] });
  if (input.password !== undefined && input.password.length < MIN_PASSWORD_LENGTH) {
    throw new SvcError("validation_failed", `the password must have at least ${MIN_PASSWORD_LENGTH} characters`, { errors: [{ path: "/password", message: `shorter than ${MIN_PASSWORD_LENGTH} characters` }] });
  }
  let account = findAccountByEmail(db, email);
  const current = account ? membership(db, account.id, by.orgId) : undefined;
  if ((input.role === "owner" || current?.role === "owner") && by.role !== "owner") {
    throw new SvcError("forbidden", "only an owner can grant or change the owner role");
  }
  if (current?.role === "owner" && input.role !== "owner" && ownerCount(db, by.orgId) <= 1) {
    throw new SvcError("conflict", `${email} is the organization's last owner; make another member owner first`);
  }
  if (account && input.password !== undefined) {
    // The account may belong to other organizations: an admin here does not reset its password.
    throw new SvcError("conflict", `an account for ${email} already exists; it keeps its own password (leave out "password")`);
  }
  if (!account) account = await createAccount(db, { email, ...(input.password !== undefined ? { password: input.password } : {}) });
  addMembership(db, account.id, by.orgId, input.role);
  return { account_id: account.id, email: account.email, role: input.role };
}

/**
 * Removes an account from the organization, ending its sessions and revoking its API tokens
 * here. Only an owner removes an owner, and the last owner stays (409). An account that is not
 * a member here (maybe of another organization) is "not found".
 */
export function removeMember(db: Db, by: Principal, accountId: string, now: number): void {
  const current = membership(db, accountId, by.orgId);
  if (!current) throw new SvcError("not_found", `member ${accountId} not found`);
  if (current.role === "owner" && by.role !== "owner") throw new SvcError("forbidden", "only an owner can remove an owner");
  db.transaction((tx) => {
    const t = tx as unknown as Db;
    if (current.role === "owner" && ownerCount(t, by.orgId) <= 1) {
      throw new SvcError("conflict", "this is the organization's last owner; make another member owner first");
    }
    t.delete(schema.memberships).where(and(eq(schema.memberships.accountId, accountId), eq(schema.memberships.orgId, by.orgId))).run();
    endAccountAccess(t, accountId, by.orgId, now);
  });
}
