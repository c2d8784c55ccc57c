// Request schemas of the model-profile routes.
import { t } from "elysia";

const SealedKey = t.String({ minLength: 1, maxLength: 65536, description: "base64 of the binary age file holding the API key" });
const SealedTo = t.Array(t.String({ minLength: 1, maxLength: 64 }), { maxItems: 1000, description: "replica ids the key was sealed to" });
/** Declared only to refuse it with a clear message: the service never takes a plaintext key. */
const PlaintextKey = t.Optional(t.Unknown({ description: "refused: seal the key to the runtimes and send api_key_sealed" }));

/** Model name → price per 1M tokens, in the organization's currency (issue 16). */
export const ModelPrices = t.Record(t.String({ minLength: 1, maxLength: 200 }), t.Object({ prompt: t.Number({ minimum: 0, maximum: 1e9 }), completion: t.Number({ minimum: 0, maximum: 1e9 }) }), {
  maxProperties: 500,
  description: "model → {prompt, completion} price per 1M tokens",
});

export const ProfileCreate = t.Object({
  display_name: t.String({ minLength: 1, maxLength: 200 }),
  endpoint: t.String({ maxLength: 2048 }),
  auth_type: t.Union([t.Literal("none"), t.Literal("api_key")]),
  default_model: t.String({ minLength: 1, maxLength: 200 }),
  models: t.Optional(t.Array(t.String({ minLength: 1, maxLength: 200 }), { maxItems: 500 })),
  workspace: t.String({ minLength: 1, maxLength: 100 }),
  api_key_sealed: t.Optional(SealedKey),
  sealed_to: t.Optional(SealedTo),
  api_key: PlaintextKey,
  prices: t.Optional(ModelPrices),
});

export const ProfilePrices = t.Object({ prices: ModelPrices });
export const ProfileApiKey = t.Object({ api_key_sealed: SealedKey, sealed_to: SealedTo, api_key: PlaintextKey });
export const ProfileAssign = t.Object({ agent_id: t.String({ minLength: 1, maxLength: 64 }) });
export const ProfileParams = t.Object({ org: t.String(), id: t.String({ minLength: 1, maxLength: 200 }) });
export const ProfileQuery = t.Object({ workspace: t.Optional(t.String({ maxLength: 100 })) });
export const ScopeQuery = t.Object({ workspace: t.String({ minLength: 1, maxLength: 100 }), agent_id: t.Optional(t.String({ maxLength: 64 })) });
export const AssignmentQuery = t.Object({ workspace: t.Optional(t.String({ maxLength: 100 })), agent_id: t.String({ minLength: 1, maxLength: 64 }) });
