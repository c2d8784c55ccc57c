// Which CLI releases use the organization's API tokens (issue 29: version skew): a CLI names
// its release in its user agent (`svc-cli/0.2.0+<commit>`), kept with the token's last use
// (service.ts principalFromToken).
import { and, desc, eq, gte, isNotNull, isNull } from "drizzle-orm";
import { type Db, tables } from "../db/index.ts";

/** The CLI releases that used the organization's tokens since `since`, newest use first. */
export async function cliClients(db: Db, orgId: string, since: number): Promise<{ tokenId: string; email: string; client: string; lastUsedAt: number }[]> {
  const { apiTokens: t, accounts: a } = tables(db);
  const rows = await db
    .select({ tokenId: t.id, email: a.email, client: t.lastClient, lastUsedAt: t.lastUsedAt })
    .from(t)
    .innerJoin(a, eq(a.id, t.accountId))
    .where(and(eq(t.orgId, orgId), isNull(t.revokedAt), isNotNull(t.lastClient), gte(t.lastUsedAt, since)))
    .orderBy(desc(t.lastUsedAt));
  return rows.map((r) => ({ tokenId: r.tokenId, email: r.email, client: r.client!, lastUsedAt: r.lastUsedAt! }));
}
