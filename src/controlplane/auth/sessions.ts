// Console sign-in with email and password: checks the password, picks the organization and
// opens a session. The cookie carries the raw session id; the table holds only its hash.
import { SvcError } from "../../contract/errors.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { createSession, membershipsOf, verifyPassword } from "./service.ts";

export async function signIn(deps: ControlPlaneDeps, input: { email: string; password: string; organizationId?: string }) {
  const account = await verifyPassword(deps.db, input.email.trim(), input.password);
  if (!account) throw new SvcError("unauthorized", "wrong email or password");
  const orgs = membershipsOf(deps.db, account.id);
  // Without organization_id the account's first organization (oldest id) is used.
  const chosen = input.organizationId ? orgs.find((o) => o.orgId === input.organizationId) : [...orgs].sort((a, b) => a.orgId.localeCompare(b.orgId))[0];
  if (!chosen) {
    throw new SvcError(
      "forbidden",
      input.organizationId ? `${account.email} is not a member of organization ${input.organizationId}` : `${account.email} is not a member of any organization`,
    );
  }
  const session = createSession(deps, account.id, chosen.orgId);
  return {
    raw: session.raw,
    body: { account: { id: account.id, email: account.email }, organization_id: chosen.orgId, role: chosen.role, csrf_token: session.csrfToken },
  };
}
