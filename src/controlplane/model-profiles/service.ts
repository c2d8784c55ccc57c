// Model profiles: an OpenAI-compatible endpoint, its models, and (for api_key auth) the key
// sealed to the runtimes' credential-sync keys. The service never sees the key in plaintext.
import { eq } from "drizzle-orm";
import type { BundleModelProfile } from "../../contract/bundle.ts";
import { type Db, schema } from "../db/index.ts";

/** The profile assigned to an agent, as the bundle carries it; null when none is assigned. */
export function profileForAgent(db: Db, agentId: string): BundleModelProfile | null {
  const mp = schema.modelProfiles;
  const row = db
    .select({
      id: mp.id,
      display_name: mp.displayName,
      endpoint: mp.endpoint,
      auth_type: mp.authType,
      default_model: mp.defaultModel,
      models: mp.models,
      api_key_sealed: mp.apiKeySealed,
    })
    .from(schema.modelProfileAssignments)
    .innerJoin(mp, eq(mp.id, schema.modelProfileAssignments.profileId))
    .where(eq(schema.modelProfileAssignments.agentId, agentId))
    .get();
  return row ?? null;
}
