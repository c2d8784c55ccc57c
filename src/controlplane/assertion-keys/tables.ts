// The organization's identity-assertion signing keys (issue 32). Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { organizations } from "../organizations/tables.ts";

export const assertionKeys = table(
  "assertion_keys",
  (c) => ({
    /** `ak_…`, also the JWK's `kid`. */
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    /** The public half as the JWKS publishes it (EC P-256 JWK with kid, alg ES256, use sig). */
    publicJwk: c.json<Record<string, string>>("public_jwk").notNull(),
    /** The private half (a JWK's JSON), wrapped by the KMS under context `assertion-key:<org>:<id>`. Never leaves this folder but sealed to a runtime replica. */
    privateWrapped: c.text("private_wrapped").notNull(),
    createdAt: c.createdAt(),
    /** When a newer key took over: published until this + RETIRED_KEY_PUBLISHED_SECONDS. */
    retiredAt: c.millis("retired_at"),
    /** Taken out of the JWKS at once (a rotation with withdraw_previous: a key thought exposed). */
    withdrawnAt: c.millis("withdrawn_at"),
  }),
  (t, c) => [c.index("assertion_keys_org").on(t.orgId, t.id)],
);
