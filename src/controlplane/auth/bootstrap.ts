// The first owner: creates an organization (with its default workspace and digest key), an
// owner account with a password, and optionally an API token for automation.
import { randomBytes } from "node:crypto";
import { PASSWORD_SET } from "../../contract/admin-event.ts";
import { SvcError } from "../../contract/errors.ts";
import { recordAdminEvent, systemActor } from "../audit/admin-events.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { createOrganization } from "../organizations/service.ts";
import { insertApiToken } from "./api-tokens.ts";
import { addMembership, createAccount, findAccountByEmail, hashPassword } from "./service.ts";

export const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function generatePassword(): string {
  return randomBytes(18).toString("base64url");
}

export async function bootstrapOwner(deps: ControlPlaneDeps, input: { email: string; orgName: string; password: string; withToken: boolean }) {
  if (!EMAIL_RE.test(input.email)) throw new SvcError("validation_failed", `"${input.email}" is not an email address`);
  if (input.password.length < 12) throw new SvcError("validation_failed", "the password must have at least 12 characters");
  if (await findAccountByEmail(deps.db, input.email)) {
    throw new SvcError("conflict", `an account for ${input.email} already exists; sign in to the console instead`);
  }
  const passwordHash = await hashPassword(input.password);
  // The organization, its owner, the token and the one event that tells of them: all or nothing.
  return deps.db.transaction(async (tx) => {
    const { orgId, workspaceId } = await createOrganization({ ...deps, db: tx }, input.orgName);
    const account = await createAccount(tx, { email: input.email, passwordHash });
    await addMembership(tx, account.id, orgId, "owner", { by: null, join: "bootstrap", at: deps.now() });
    const issued = input.withToken ? await insertApiToken({ ...deps, db: tx }, { accountId: account.id, orgId, name: "bootstrap", signIn: { at: deps.now() } }) : null;
    const after = {
      organization: { id: orgId, name: input.orgName },
      workspace_id: workspaceId,
      owner: { account_id: account.id, email: account.email, role: "owner", password: PASSWORD_SET },
      api_token: issued ? { id: issued.id, name: "bootstrap", expires_at: new Date(issued.expiresAt).toISOString() } : null,
    };
    await recordAdminEvent(tx, { orgId, action: "organization.bootstrap", actor: systemActor("bootstrap"), target: { type: "organization", id: orgId, name: input.orgName }, after }, deps.now());
    return { accountId: account.id, orgId, workspaceId, token: issued?.token ?? null };
  });
}
