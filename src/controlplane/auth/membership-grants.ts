// Where each membership came from (issue 27): who created, invited or added an account to an
// organization, who raised or lowered its role, and when. One row per grant, written in the
// transaction of the change (service.ts `addMembership`), never updated or deleted, kept after
// the membership ends: "ever", not just the latest change. Escrow's two-person rule reads it:
// an approver whom the requester granted, directly or through accounts the requester granted
// (a sockpuppet that adds a second sockpuppet), is the requester's own account for all the
// control plane can tell. Memberships older than this table have one `unknown` grant (the
// migration wrote it): no grantor is known, so the chain stops there (docs/audit.md).
import { and, eq, inArray, isNotNull, ne } from "drizzle-orm";
import { newId } from "../../contract/ids.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import type { Role } from "./principal.ts";

/** How an account joined: bootstrap (no person), created with a password the granter chose, invited (no password: it signs in through SSO), or an existing account added. */
export type JoinKind = "bootstrap" | "created" | "invited" | "added";
export type GrantKind = JoinKind | "raised" | "lowered" | "unknown";
export type GrantRow = Tables["membershipGrants"]["$inferSelect"];

/** Who made a membership change and how the account joined if it is new. `by` null: no person (bootstrap). */
export type Grant = { by: string | null; join: JoinKind; at: number };

const RANK: Record<Role, number> = { member: 0, admin: 1, owner: 2 };

/** The kind of a role change, or null when the role stays the same (pure). */
export function roleChangeKind(from: Role, to: Role): "raised" | "lowered" | null {
  if (RANK[to] === RANK[from]) return null;
  return RANK[to] > RANK[from] ? "raised" : "lowered";
}

export async function recordGrant(tx: Db, g: { orgId: string; accountId: string; kind: GrantKind; role: Role; previousRole: Role | null; by: string | null; at: number }): Promise<void> {
  await tx
    .insert(tables(tx).membershipGrants)
    .values({ id: newId("membershipGrant", g.at), orgId: g.orgId, accountId: g.accountId, kind: g.kind, role: g.role, previousRole: g.previousRole, byAccountId: g.by, at: g.at });
}

/** Every grant of the account in the organization, oldest first. */
export async function grantsOf(db: Db, accountId: string, orgId: string): Promise<GrantRow[]> {
  const g = tables(db).membershipGrants;
  return db
    .select()
    .from(g)
    .where(and(eq(g.accountId, accountId), eq(g.orgId, orgId)))
    .orderBy(g.at, g.id);
}

/** Accounts granted along one path are at most this deep; deeper chains are not followed (and say so). */
export const MAX_GRANT_DEPTH = 64;

/**
 * The path by which `ancestorId` granted `accountId` anything, in any organization, directly or
 * through accounts `ancestorId` granted: the grants from `accountId` up to the one `ancestorId`
 * made, or null when there is none. Lowering a role grants nothing and is not followed.
 */
export async function grantPath(db: Db, accountId: string, ancestorId: string): Promise<GrantRow[] | null> {
  const g = tables(db).membershipGrants;
  const reachedBy = new Map<string, GrantRow>();
  const seen = new Set([accountId]);
  let frontier = [accountId];
  for (let depth = 0; frontier.length > 0 && depth < MAX_GRANT_DEPTH; depth++) {
    const rows = await db
      .select()
      .from(g)
      .where(and(inArray(g.accountId, frontier), isNotNull(g.byAccountId), ne(g.kind, "lowered")))
      .orderBy(g.at, g.id);
    const next: string[] = [];
    for (const r of rows) {
      const by = r.byAccountId!;
      if (by === ancestorId) return pathTo(r, accountId, reachedBy);
      if (seen.has(by)) continue;
      seen.add(by);
      reachedBy.set(by, r);
      next.push(by);
    }
    frontier = next;
  }
  return null;
}

function pathTo(last: GrantRow, start: string, reachedBy: Map<string, GrantRow>): GrantRow[] {
  const path = [last];
  for (let cur = last.accountId; cur !== start; ) {
    const link = reachedBy.get(cur)!;
    path.unshift(link);
    cur = link.accountId;
  }
  return path;
}

/** When the account's current membership began (null: not a member). */
export async function memberSince(db: Db, accountId: string, orgId: string): Promise<number | null> {
  const m = tables(db).memberships;
  const [row] = await db
    .select({ createdAt: m.createdAt })
    .from(m)
    .where(and(eq(m.accountId, accountId), eq(m.orgId, orgId)));
  return row?.createdAt ?? null;
}
