// The first owner: creates an organization (with its default workspace and digest key), an
// owner account with a password, and optionally an API token for automation.
import { randomBytes } from "node:crypto";
import { SvcError } from "../../contract/errors.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { createOrganization } from "../organizations/service.ts";
import { addMembership, createAccount, findAccountByEmail, issueApiToken } from "./service.ts";

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
  if (findAccountByEmail(deps.db, input.email)) {
    throw new SvcError("conflict", `an account for ${input.email} already exists; sign in to the console instead`);
  }
  const account = await createAccount(deps.db, { email: input.email, password: input.password });
  const { orgId, workspaceId } = createOrganization(deps, input.orgName);
  addMembership(deps.db, account.id, orgId, "owner");
  const token = input.withToken ? issueApiToken(deps, { accountId: account.id, orgId, name: "bootstrap" }).token : null;
  return { accountId: account.id, orgId, workspaceId, token };
}
