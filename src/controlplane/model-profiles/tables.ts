// The tables of model profiles and their assignment to agents. Declared once for both stores (db/table.ts, db/README.md).
import { table } from "../db/table.ts";
import { agents } from "../agents/tables.ts";
import { organizations, workspaces } from "../organizations/tables.ts";

export const modelProfiles = table(
  "model_profiles",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    workspaceId: c
      .text("workspace_id")
      .notNull()
      .references(() => workspaces.id),
    displayName: c.text("display_name").notNull(),
    endpoint: c.text("endpoint").notNull(),
    authType: c.text("auth_type", { enum: ["none", "api_key"] }).notNull(),
    defaultModel: c.text("default_model").notNull(),
    models: c.json<string[]>("models").notNull(),
    /** base64 age ciphertext of the API key, sealed to the replicas listed in sealedTo. Never plaintext. */
    apiKeySealed: c.text("api_key_sealed"),
    sealedTo: c.json<string[]>("sealed_to").notNull().default([]),
    /** The credential-sync recipients (age1…) of those replicas when the key was stored: what readiness compares. */
    sealedRecipients: c.json<string[]>("sealed_recipients").notNull().default([]),
    /** Model name → price per 1M tokens {prompt, completion} (issue 16); null = no prices. */
    prices: c.json<Record<string, { prompt: number; completion: number }>>("prices"),
    createdAt: c.createdAt(),
  }),
  (t, c) => [c.uniqueIndex("model_profiles_ws_name").on(t.workspaceId, t.displayName)],
);

export const modelProfileAssignments = table("model_profile_assignments", (c) => ({
  agentId: c
    .text("agent_id")
    .primaryKey()
    .references(() => agents.id),
  profileId: c
    .text("profile_id")
    .notNull()
    .references(() => modelProfiles.id),
  assignedAt: c.millis("assigned_at").notNull(),
}));
