// The first owner: creates an organization (with its default workspace and digest key), an
// owner account with a password, and optionally an API token for automation.
import { randomBytes } from "node:crypto";
import { SvcError } from "../../contract/errors.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { createOrganization } from "../organizations/service.ts";
import { addMembership, createAccount, findAccountByEmail, hashPassword, issueApiToken } from "./service.ts";

export const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export function generatePassword(): string {
  return randomBytes(18).toString("base64url");
}

export async function bootstrapOwner(
  deps: ControlPlaneDeps,
  input: { email: string; orgName: string; password: string; withToken: boolean },
) {
  if (!EMAIL_RE.test(input.email)) throw new SvcError("validation_failed", `"${input.email}" is not an email address`);
  if (input.password.length < 12) throw new SvcError("validation_failed", "the password must have at least 12 characters");
  if (await findAccountByEmail(deps.db, input.email)) {
    throw new SvcError("conflict", `an account for ${input.email} already exists; sign in to the console instead`);
  }
  const passwordHash = await hashPassword(input.password);
  const { orgId, workspaceId } = await createOrganization(deps, input.orgName);
  const accountId = await deps.db.transaction(async (tx) => {
    const account = await createAccount(tx, { email: input.email, passwordHash });
    await addMembership(tx, account.id, orgId, "owner", { by: null, join: "bootstrap", at: deps.now() });
    return account.id;
  });
  const token = input.withToken ? (await issueApiToken(deps, { accountId, orgId, name: "bootstrap", signIn: { at: deps.now() } })).token : null;
  return { accountId, orgId, workspaceId, token };
}
