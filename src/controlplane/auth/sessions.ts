// Console sign-in with email and password: checks the password, picks the organization and
// opens a password session (which may later switch among the account's organizations). The cookie carries the raw session id; the table holds only its hash.
import { SvcError } from "../../contract/errors.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { createSession, defaultOrganization, membershipsOf, verifyPassword } from "./service.ts";

export async function signIn(deps: ControlPlaneDeps, input: { email: string; password: string; organizationId?: string }) {
  const account = await verifyPassword(deps.db, input.email.trim(), input.password);
  if (!account) throw new SvcError("unauthorized", "wrong email or password");
  const orgs = membershipsOf(deps.db, account.id);
  const chosen = input.organizationId ? orgs.find((o) => o.orgId === input.organizationId) : defaultOrganization(orgs);
  if (!chosen) {
    throw new SvcError(
      "forbidden",
      input.organizationId ? `${account.email} is not a member of organization ${input.organizationId}` : `${account.email} is not a member of any organization`,
    );
  }
  const session = createSession(deps, account.id, chosen.orgId, "password");
  return {
    raw: session.raw,
    body: { account: { id: account.id, email: account.email }, organization_id: chosen.orgId, role: chosen.role, csrf_token: session.csrfToken },
  };
}
