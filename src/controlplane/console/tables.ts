// The table of console SSO: per-organization OpenID Connect settings. Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { organizations } from "../organizations/tables.ts";

/** Per-organization OpenID Connect single sign-on for the console. */
export const oidcConfigs = table("oidc_configs", (c) => ({
  orgId: c
    .text("org_id")
    .primaryKey()
    .references(() => organizations.id),
  issuer: c.text("issuer").notNull(),
  clientId: c.text("client_id").notNull(),
  wrappedClientSecret: c.text("wrapped_client_secret").notNull(),
  createdAt: c.createdAt(),
}));
