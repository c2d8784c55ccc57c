// Support for the escrow recovery tests against a real control-plane process, whose clock a test
// cannot move: the rows that hold an age (a membership's start, a credential's sign-in time) are
// moved back instead, in its own store (SQLite file or PostgreSQL), as time passing would.
import { eq, inArray, sql } from "drizzle-orm";
import { openStore, tables } from "../../src/controlplane/db/index.ts";
import type { ControlPlaneProcess } from "../support/controlplane-process.ts";

const HOUR = 3_600_000;

async function accountIds(db: ReturnType<typeof openStore>["db"], emails: string[]): Promise<string[]> {
  const a = tables(db).accounts;
  return (await db.select({ id: a.id }).from(a).where(inArray(a.email, emails))).map((r) => r.id);
}

/** As if the memberships of these accounts had begun `hours` earlier. */
export async function ageMemberships(cp: ControlPlaneProcess, emails: string[], hours: number): Promise<void> {
  const store = openStore(cp.database);
  try {
    const m = tables(store.db).memberships;
    await store.db
      .update(m)
      .set({ createdAt: sql`${m.createdAt} - ${hours * HOUR}` })
      .where(inArray(m.accountId, await accountIds(store.db, emails)));
  } finally {
    await store.close();
  }
}

/** As if every API token and console session of this account had been signed in `minutes` earlier. */
export async function ageSignIns(cp: ControlPlaneProcess, email: string, minutes: number): Promise<void> {
  const store = openStore(cp.database);
  try {
    const [id] = await accountIds(store.db, [email]);
    const { apiTokens: t, sessions: s } = tables(store.db);
    const back = minutes * 60_000;
    await store.db
      .update(t)
      .set({ authenticatedAt: sql`${t.authenticatedAt} - ${back}` })
      .where(eq(t.accountId, id!));
    await store.db
      .update(s)
      .set({ authenticatedAt: sql`${s.authenticatedAt} - ${back}` })
      .where(eq(s.accountId, id!));
  } finally {
    await store.close();
  }
}

/** A password sign-in through the API: the cookie and CSRF token of a fresh console session. */
export async function apiSignIn(cp: ControlPlaneProcess, email: string, password: string): Promise<{ cookie: string; csrf: string }> {
  const res = await fetch(`${cp.url}/api/v1/auth/sessions`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ email, password, organization_id: cp.orgId }) });
  if (res.status !== 200) throw new Error(`sign-in of ${email}: ${res.status}`);
  return {
    cookie: res.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; "),
    csrf: ((await res.json()) as { csrf_token: string }).csrf_token,
  };
}

/** An API token issued from that session (it carries the session's sign-in time). */
export async function tokenFrom(cp: ControlPlaneProcess, session: { cookie: string; csrf: string }, name = "cli"): Promise<string> {
  const res = await fetch(`${cp.url}/api/v1/organizations/${cp.orgId}/api-tokens`, {
    method: "POST",
    headers: { "content-type": "application/json", cookie: session.cookie, "x-csrf-token": session.csrf },
    body: JSON.stringify({ name }),
  });
  if (res.status !== 201) throw new Error(`api token: ${res.status}`);
  return ((await res.json()) as { token: string }).token;
}
