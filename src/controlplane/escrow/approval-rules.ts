// The two-person rule of escrow recovery, between people and not just accounts (issue 27). An
// owner can make accounts at will (POST /members with a password of their choosing), so "a
// different account approved" proves nothing. The approver of a request is refused when:
//   1. it is the requester (recovery_self_approval);
//   2. the requester created, invited, added or raised it, ever, directly or through accounts
//      the requester granted (recovery_approver_provenance; auth/membership-grants.ts);
//   3. the identity provider knows both as the same person: one `sub` (recovery_same_idp_subject);
//   4. its membership was younger than the organization's minimum age when the request was
//      made (recovery_approver_too_new; recovery-policy.ts, default 24 hours);
//   5. it signed in through single sign-on as a provider identity first seen less than that
//      age before the request (recovery_idp_identity_too_new): an owner changes the provider,
//      and a provider they run can assert any admin's email; an identity it made or changed
//      for the occasion is new, one the admin has long used is not;
//   6. it did not sign in within the last 5 minutes (recovery_stale_sign_in): a console session
//      opened then, or an API token issued from such a session.
// The rules are checked in this order and the first that fails is the answer: the ones about
// who the approver is come before the one about their sign-in, so nobody is sent to sign in
// again only to be refused for who they are. Pure: the facts are gathered by approval.ts.
import { SvcError } from "../../contract/errors.ts";

/** Approval needs a sign-in at most this old. */
export const FRESH_SIGN_IN_MS = 5 * 60_000;
const HOUR_MS = 3_600_000;

export type Person = { accountId: string; email: string };
/** One grant on the path from the approver up to the requester: `accountId` was granted by `by`. */
export type GrantStep = { accountId: string; email: string; kind: string; role: string; by: string; byEmail: string; at: number };

export type ApprovalFacts = {
  requestId: string;
  requestedAt: number;
  requester: Person;
  approver: Person & { via: "token" | "session"; authenticatedAt: number | null };
  now: number;
  /** The minimum membership age (hours) in force for the request. */
  minAgeHours: number;
  /** When the approver's membership began (null: unknown). */
  approverMemberSince: number | null;
  /** How the requester granted the approver, or null when they never did. */
  grantPath: GrantStep[] | null;
  /** The identity-provider subject both signed in as, or null. */
  sharedIdpSubject: { issuer: string; subject: string } | null;
  /** The provider identity the approver signed in as, when through single sign-on, and when the account was first seen as it. */
  approverIdp: { issuer: string; subject: string; since: number | null } | null;
};

const iso = (ms: number) => new Date(ms).toISOString();
const hours = (ms: number) => `${Math.round((ms / HOUR_MS) * 10) / 10} hours`;
const minutes = (ms: number) => `${Math.max(0, Math.floor(ms / 60_000))} minutes`;

const VERB: Record<string, string> = { created: "created", invited: "invited", added: "added", raised: "raised" };

/** "b@x was created as admin by a@x at …, and a@x was invited as admin by owner@x at …" (pure). */
export function describeGrantPath(path: GrantStep[]): string {
  return path.map((s) => `${s.email} was ${VERB[s.kind] ?? s.kind} ${s.kind === "raised" ? "to" : "as"} ${s.role} by ${s.byEmail} at ${iso(s.at)}`).join(", and ");
}

/** Each rule in a few words, about the approver in the third person (notices and events). */
export const RULE_SUMMARY: Record<string, string> = {
  recovery_self_approval: "they requested it themselves",
  recovery_approver_provenance: "the requester created, invited, added or raised their membership (directly or through accounts the requester granted)",
  recovery_same_idp_subject: "the identity provider knows them as the requester",
  recovery_approver_too_new: "their membership was younger than the minimum age when the request was made",
  recovery_idp_identity_too_new: "the single sign-on identity they signed in as was newer than the minimum age when the request was made",
  recovery_stale_sign_in: "they had not signed in within the last 5 minutes",
};

/** The refusal of the approval, or null when the approver may approve (pure). */
export function approvalRefusal(f: ApprovalFacts): SvcError | null {
  const { requester: r, approver: a, requestId: id } = f;
  if (a.accountId === r.accountId) {
    return new SvcError(
      "recovery_self_approval",
      `you requested ${id}, so you cannot approve it; another person must, an owner or admin whose membership you never granted (\`svc audit recover approve ${id}\`)`,
    );
  }
  if (f.grantPath) {
    return new SvcError(
      "recovery_approver_provenance",
      `${a.email} cannot approve ${id}: ${describeGrantPath(f.grantPath)}. An account the requester created, invited, added or raised in role (ever, or through accounts they granted) may be the requester's own; an owner or admin whose membership ${r.email} never granted must approve`,
    );
  }
  if (f.sharedIdpSubject) {
    const s = f.sharedIdpSubject;
    return new SvcError(
      "recovery_same_idp_subject",
      `${a.email} cannot approve ${id}: the identity provider ${s.issuer} knows ${a.email} and the requester ${r.email} as the same person (subject ${s.subject}); another person, with an identity of their own at the provider, must approve`,
    );
  }
  const needed = f.minAgeHours * HOUR_MS;
  const since = f.approverMemberSince;
  if (since === null || f.requestedAt - since < needed) {
    const age = since === null ? "no membership" : `a membership of ${hours(Math.max(0, f.requestedAt - since))} (since ${iso(since)})`;
    const later = since === null ? "" : `, or ${r.email} makes a new request from ${iso(since + needed)}, when the membership is old enough`;
    return new SvcError(
      "recovery_approver_too_new",
      `${a.email} cannot approve ${id}: approvers must have been members for at least ${f.minAgeHours} hours when the request was made (${iso(f.requestedAt)}), and ${a.email} had ${age}; an owner or admin of longer standing must approve${later}`,
    );
  }
  const idp = f.approverIdp;
  if (idp && (idp.since === null || f.requestedAt - idp.since < needed)) {
    const seen = idp.since === null ? "never seen before" : `first seen at ${iso(idp.since)}`;
    return new SvcError(
      "recovery_idp_identity_too_new",
      `${a.email} cannot approve ${id}: you signed in through single sign-on as ${idp.subject} of ${idp.issuer}, ${seen}, and an approval through single sign-on needs a provider identity seen for at least ${f.minAgeHours} hours when the request was made (${iso(f.requestedAt)}), since a provider changed or an identity made since could speak for anyone; sign in with your password if you have one, or an owner or admin of longer standing must approve`,
    );
  }
  const at = a.authenticatedAt;
  if (at === null || f.now - at > FRESH_SIGN_IN_MS) {
    const ago = at === null ? "at a time not recorded" : `${minutes(f.now - at)} ago (${iso(at)})`;
    const todo =
      a.via === "token"
        ? `run \`svc login\` again (sign in afresh on the page it opens), then approve within 5 minutes: \`svc audit recover approve ${id}\``
        : "sign out, sign in again, then approve within 5 minutes";
    const yours = a.via === "token" ? `your API token comes from a sign-in ${ago}` : `your console session signed in ${ago}`;
    return new SvcError("recovery_stale_sign_in", `approving ${id} needs a sign-in within the last 5 minutes, and ${yours}; ${todo}`);
  }
  return null;
}
