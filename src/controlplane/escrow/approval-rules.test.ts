// The approval rules as a pure function: each rule's code and what its detail says, and their
// order (who the approver is before their sign-in), case by case.
import { describe, expect, test } from "bun:test";
import { type ApprovalFacts, FRESH_SIGN_IN_MS, approvalRefusal, describeGrantPath } from "./approval-rules.ts";

const H = 3_600_000;
const T = Date.UTC(2026, 0, 10);
const ok: ApprovalFacts = {
  requestId: "rrq_1",
  requestedAt: T,
  requester: { accountId: "acc_R", email: "r@x.test" },
  approver: { accountId: "acc_A", email: "a@x.test", via: "session", authenticatedAt: T + H },
  now: T + H + 60_000,
  minAgeHours: 24,
  approverMemberSince: T - 25 * H,
  grantPath: null,
  sharedIdpSubject: null,
  approverIdp: null,
};
const code = (f: Partial<ApprovalFacts>) => approvalRefusal({ ...ok, ...f })?.code ?? null;
const puppet = [{ accountId: "acc_A", email: "a@x.test", kind: "created", role: "admin", by: "acc_R", byEmail: "r@x.test", at: T - 30 * H }];

describe("approvalRefusal", () => {
  test("a person of long standing, freshly signed in, whom the requester never granted: no refusal", () => {
    expect(approvalRefusal(ok)).toBeNull();
    expect(code({ approverMemberSince: T - 24 * H })).toBeNull(); // exactly the minimum age
    expect(code({ now: ok.approver.authenticatedAt! + FRESH_SIGN_IN_MS })).toBeNull(); // exactly 5 minutes
  });

  test("each rule refuses with its own code", () => {
    expect(code({ approver: { ...ok.approver, accountId: "acc_R" } })).toBe("recovery_self_approval");
    expect(code({ grantPath: puppet })).toBe("recovery_approver_provenance");
    expect(code({ sharedIdpSubject: { issuer: "https://idp", subject: "s1" } })).toBe("recovery_same_idp_subject");
    expect(code({ approverMemberSince: T - 24 * H + 1 })).toBe("recovery_approver_too_new");
    expect(code({ approverMemberSince: null })).toBe("recovery_approver_too_new");
    expect(code({ approverIdp: { issuer: "https://idp", subject: "s1", since: T - 24 * H + 1 } })).toBe("recovery_idp_identity_too_new");
    expect(code({ approverIdp: { issuer: "https://idp", subject: "s1", since: null } })).toBe("recovery_idp_identity_too_new");
    expect(code({ approverIdp: { issuer: "https://idp", subject: "s1", since: T - 24 * H } })).toBeNull();
    expect(code({ now: ok.approver.authenticatedAt! + FRESH_SIGN_IN_MS + 1 })).toBe("recovery_stale_sign_in");
    expect(code({ approver: { ...ok.approver, authenticatedAt: null } })).toBe("recovery_stale_sign_in");
  });

  test("who the approver is is answered before their sign-in, provenance first", () => {
    const everything = { grantPath: puppet, sharedIdpSubject: { issuer: "i", subject: "s" }, approverMemberSince: T, approver: { ...ok.approver, authenticatedAt: null } };
    expect(code(everything)).toBe("recovery_approver_provenance");
    expect(code({ ...everything, grantPath: null })).toBe("recovery_same_idp_subject");
    expect(code({ ...everything, grantPath: null, sharedIdpSubject: null })).toBe("recovery_approver_too_new");
    expect(code({ ...everything, grantPath: null, sharedIdpSubject: null, approverMemberSince: ok.approverMemberSince, approverIdp: { issuer: "i", subject: "s", since: T } })).toBe(
      "recovery_idp_identity_too_new",
    );
  });

  test("the details say the rule and what would satisfy it", () => {
    expect(approvalRefusal({ ...ok, approverMemberSince: T - 2 * H })!.message).toBe(
      "a@x.test cannot approve rrq_1: approvers must have been members for at least 24 hours when the request was made (2026-01-10T00:00:00.000Z), and a@x.test had a membership of 2 hours (since 2026-01-09T22:00:00.000Z); an owner or admin of longer standing must approve, or r@x.test makes a new request from 2026-01-10T22:00:00.000Z, when the membership is old enough",
    );
    const token = { ...ok.approver, via: "token" as const, authenticatedAt: T };
    expect(approvalRefusal({ ...ok, approver: token, now: T + 9 * 60_000 })!.message).toBe(
      "approving rrq_1 needs a sign-in within the last 5 minutes, and your API token comes from a sign-in 9 minutes ago (2026-01-10T00:00:00.000Z); run `svc login` again (sign in afresh on the page it opens), then approve within 5 minutes: `svc audit recover approve rrq_1`",
    );
    expect(describeGrantPath([...puppet.map((p) => ({ ...p, email: "b@x.test", by: "acc_A", byEmail: "a@x.test" })), { ...puppet[0]!, kind: "raised", role: "owner" }])).toBe(
      "b@x.test was created as admin by a@x.test at 2026-01-08T18:00:00.000Z, and a@x.test was raised to owner by r@x.test at 2026-01-08T18:00:00.000Z",
    );
  });
});
