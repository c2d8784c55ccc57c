// Console sign-in with email and password: checks the password, picks the organization and
// opens a password session (which may later switch among the account's organizations). The cookie carries the raw session id; the table holds only its hash.
// Wrong passwords are limited per email and per client IP (http/rate-limit.ts, shared by every
// replica): at the limit every attempt, right or wrong, is refused with 429 rate_limited until
// the window ends. Each attempt is counted before the password is checked (check and count are
// one atomic upsert), so a burst of concurrent guesses cannot all pass a check made before any
// of them was counted; the right password then takes its attempt back.
import { SvcError } from "../../contract/errors.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { limiters, rateLimited } from "../http/rate-limit.ts";
import { createSession, defaultOrganization, membershipsOf, verifyPassword } from "./service.ts";

export async function signIn(deps: ControlPlaneDeps, input: { email: string; password: string; organizationId?: string; clientIp?: string | null }) {
  const email = input.email.trim();
  const emailKey = email.toLowerCase();
  const ip = input.clientIp ?? null;
  const l = limiters(deps);
  const wait = Math.max(...(await Promise.all([l.signInEmail.hit(emailKey), ip ? l.signInIp.hit(ip) : 0])));
  if (wait > 0) {
    deps.log.warn("sign-in rate limited", { email: emailKey, ip });
    throw rateLimited(`too many failed sign-in attempts; wait ${wait} seconds and try again`, wait);
  }
  const account = await verifyPassword(deps.db, email, input.password);
  if (!account) throw new SvcError("unauthorized", "wrong email or password");
  // The right password clears the email's failures, and takes this attempt back from the IP's
  // count (only this one: one known account must not reset the count of guesses against others).
  await Promise.all([l.signInEmail.reset(emailKey), ip ? l.signInIp.unhit(ip) : undefined]);
  const orgs = await membershipsOf(deps.db, account.id);
  const chosen = input.organizationId ? orgs.find((o) => o.orgId === input.organizationId) : defaultOrganization(orgs);
  if (!chosen) {
    throw new SvcError(
      "forbidden",
      input.organizationId ? `${account.email} is not a member of organization ${input.organizationId}` : `${account.email} is not a member of any organization`,
    );
  }
  const session = await createSession(deps, account.id, chosen.orgId, "password", { at: deps.now() });
  return {
    raw: session.raw,
    body: { account: { id: account.id, email: account.email }, organization_id: chosen.orgId, role: chosen.role, csrf_token: session.csrfToken },
  };
}
