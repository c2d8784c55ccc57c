// Request schemas of the installation routes.
import { t } from "elysia";

export const InstallationCreate = t.Object({
  // A plain string, not a literal: anything but "chatui" gets the dedicated invalid_platform refusal.
  platform: t.String({ maxLength: 100 }),
  name: t.String({ minLength: 1, maxLength: 200 }),
  agent_id: t.String({ minLength: 1, maxLength: 64 }),
  workspace: t.String({ minLength: 1, maxLength: 100 }),
});

export const CredentialRequest = t.Optional(t.Object({ rotate: t.Optional(t.Boolean()) }));
