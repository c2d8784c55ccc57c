// The identity-provider subjects an account signed in as (issue 27). A provider names a person
// by its `sub` claim, which stays when the email it shows changes; svc matches accounts by the
// verified email. So one person can reach two accounts (change the email at the provider, sign
// in again): the subjects each account was seen with tell them apart from two people. Written
// at every single sign-on (console/session.ts `openSession`), read by escrow's approval rule.
import { and, eq, inArray } from "drizzle-orm";
import { type Db, tables } from "../db/index.ts";

export type IdpSubject = { issuer: string; subject: string };

/** Remembers that the account signed in as `subject` of `issuer`; call in the session's transaction. */
export async function recordIdpSubject(tx: Db, s: IdpSubject & { accountId: string; orgId: string; at: number }): Promise<void> {
  const t = tables(tx).idpSubjects;
  await tx
    .insert(t)
    .values({ accountId: s.accountId, issuer: s.issuer, subject: s.subject, orgId: s.orgId, firstSeenAt: s.at, lastSeenAt: s.at })
    .onConflictDoUpdate({ target: [t.accountId, t.issuer, t.subject], set: { lastSeenAt: s.at } });
}

/** A subject both accounts signed in as (the same person at the provider), or null. */
export async function sharedIdpSubject(db: Db, a: string, b: string): Promise<IdpSubject | null> {
  const t = tables(db).idpSubjects;
  const rows = await db
    .select({ accountId: t.accountId, issuer: t.issuer, subject: t.subject })
    .from(t)
    .where(inArray(t.accountId, [a, b]));
  const key = (r: IdpSubject) => `${r.issuer}\u0000${r.subject}`;
  const ofA = new Set(rows.filter((r) => r.accountId === a).map(key));
  const shared = rows.find((r) => r.accountId === b && ofA.has(key(r)));
  return shared ? { issuer: shared.issuer, subject: shared.subject } : null;
}

/** When the account was first seen signing in as `idp` (null: never). */
export async function idpSubjectSince(db: Db, accountId: string, idp: IdpSubject): Promise<number | null> {
  const t = tables(db).idpSubjects;
  const [row] = await db
    .select({ at: t.firstSeenAt })
    .from(t)
    .where(and(eq(t.accountId, accountId), eq(t.issuer, idp.issuer), eq(t.subject, idp.subject)));
  return row?.at ?? null;
}
