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
// Making a member owner ends its sessions and API tokens here too: they may have been opened
// through single sign-on (which never speaks for an owner, auth/service.ts `ssoMayOpen`), and
// must not carry the owner role; the new owner signs in again with their password.
import { PASSWORD_SET } from "../../contract/admin-event.ts";
import { SvcError } from "../../contract/errors.ts";
import { actorOf, recordAdminEvent } from "../audit/admin-events.ts";
import { EMAIL_RE } from "../auth/bootstrap.ts";
import {
  type Principal,
  type Role,
  addMembership,
  createAccount,
  emailsOfAccounts,
  endAccountAccess,
  findAccountByEmail,
  hashPassword,
  membersOf,
  membership,
  ownerCount,
  removeMembership,
} from "../auth/service.ts";
import type { Db } from "../db/index.ts";

export const MIN_PASSWORD_LENGTH = 12;

export type Member = { account_id: string; email: string; role: Role };

export async function listMembers(db: Db, orgId: string): Promise<Member[]> {
  return (await membersOf(db, orgId)).map((m) => ({ account_id: m.accountId, email: m.email, role: m.role }));
}

/** Adds an account to the organization with a role, or changes the role of an existing member. */
export async function addMember(db: Db, by: Principal, input: { email: string; role: Role; password?: string }, now: number): Promise<Member> {
  const email = input.email.trim().toLowerCase();
  if (!EMAIL_RE.test(email)) throw new SvcError("validation_failed", `"${input.email}" is not an email address`, { errors: [{ path: "/email", message: "not an email address" }] });
  if (input.password !== undefined && input.password.length < MIN_PASSWORD_LENGTH) {
    throw new SvcError("validation_failed", `the password must have at least ${MIN_PASSWORD_LENGTH} characters`, {
      errors: [{ path: "/password", message: `shorter than ${MIN_PASSWORD_LENGTH} characters` }],
    });
  }
  const passwordHash = input.password !== undefined ? await hashPassword(input.password) : undefined;
  return db.transaction(async (tx) => {
    const account = await findAccountByEmail(tx, email);
    const current = account ? await membership(tx, account.id, by.orgId) : undefined;
    if ((input.role === "owner" || current?.role === "owner") && by.role !== "owner") {
      throw new SvcError("forbidden", "only an owner can grant or change the owner role");
    }
    if (current?.role === "owner" && input.role !== "owner" && (await ownerCount(tx, by.orgId)) <= 1) {
      throw new SvcError("conflict", `${email} is the organization's last owner; make another member owner first`);
    }
    if (account && passwordHash !== undefined) {
      // The account may belong to other organizations: an admin here does not reset its password.
      throw new SvcError("conflict", `an account for ${email} already exists; it keeps its own password (leave out "password")`);
    }
    const member = account ?? (await createAccount(tx, { email, ...(passwordHash !== undefined ? { passwordHash } : {}) }));
    // Who did it is kept for good (auth/membership-grants.ts): escrow's approval rule reads it.
    const join = account ? "added" : passwordHash !== undefined ? "created" : "invited";
    await addMembership(tx, member.id, by.orgId, input.role, { by: by.accountId, join, at: now });
    const ended = current && current.role !== "owner" && input.role === "owner" ? await endAccountAccess(tx, member.id, by.orgId, now) : null;
    const target = { type: "member", id: member.id, name: member.email };
    if (!current) {
      const after = { account_id: member.id, email: member.email, role: input.role, account_created: !account, ...(passwordHash !== undefined ? { password: PASSWORD_SET } : {}) };
      await recordAdminEvent(tx, { orgId: by.orgId, action: "member.add", actor: actorOf(by), target, after, ...(input.role === "owner" ? { severity: "high" } : {}) }, now);
    } else if (current.role !== input.role) {
      const after = { role: input.role, ...(ended ? { sessions_ended: ended.sessionsEnded, api_tokens_revoked: ended.apiTokensRevoked } : {}) };
      // Giving or taking the owner role is what the two-person rule watches: high.
      const severity = input.role === "owner" || current.role === "owner" ? "high" : "notice";
      await recordAdminEvent(tx, { orgId: by.orgId, action: "member.role_change", actor: actorOf(by), target, before: { role: current.role }, after, severity }, now);
    }
    return { account_id: member.id, email: member.email, role: input.role };
  });
}

/**
 * Removes an account from the organization, ending its sessions and revoking its API tokens
 * here. Only an owner removes an owner, and the last owner stays (409). An account that is not
 * a member here (maybe of another organization) is "not found".
 */
export async function removeMember(db: Db, by: Principal, accountId: string, now: number): Promise<void> {
  await db.transaction(async (tx) => {
    const current = await membership(tx, accountId, by.orgId);
    if (!current) throw new SvcError("not_found", `member ${accountId} not found`);
    if (current.role === "owner" && by.role !== "owner") throw new SvcError("forbidden", "only an owner can remove an owner");
    if (current.role === "owner" && (await ownerCount(tx, by.orgId)) <= 1) {
      throw new SvcError("conflict", "this is the organization's last owner; make another member owner first");
    }
    await removeMembership(tx, accountId, by.orgId);
    const ended = await endAccountAccess(tx, accountId, by.orgId, now);
    const email = (await emailsOfAccounts(tx, [accountId])).get(accountId) ?? null;
    await recordAdminEvent(
      tx,
      {
        orgId: by.orgId,
        action: "member.remove",
        actor: actorOf(by),
        target: { type: "member", id: accountId, name: email },
        before: { account_id: accountId, email, role: current.role },
        after: { sessions_ended: ended.sessionsEnded, api_tokens_revoked: ended.apiTokensRevoked },
        ...(current.role === "owner" ? { severity: "high" } : {}),
      },
      now,
    );
  });
}
