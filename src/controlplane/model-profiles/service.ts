// Model profiles: an OpenAI-compatible endpoint, its models, and (for api_key auth) the key
// sealed to the runtimes' credential-sync keys. The service never sees the key in plaintext.
import { and, eq } from "drizzle-orm";
import type { BundleModelProfile } from "../../contract/bundle.ts";
import { SvcError } from "../../contract/errors.ts";
import { hasPrefix, newId } from "../../contract/ids.ts";
import { checkEndpoint } from "../../contract/model-endpoint.ts";
import { getAgent, getAgentInWorkspace } from "../agents/service.ts";
import { type Acting, recordChange, secretDigest } from "../audit/admin-events.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import { bumpRevision, resolveWorkspace } from "../organizations/service.ts";
import { recipientsInScope } from "../installations/replicas.ts";
import { checkSealedKey, checkSealedTo, refusePlaintextKey } from "./sealed-key.ts";

/** The profile assigned to an agent, as the bundle carries it; null when none is assigned. */
export async function profileForAgent(db: Db, agentId: string): Promise<BundleModelProfile | null> {
  const { modelProfiles: mp, modelProfileAssignments: a } = tables(db);
  const [row] = await db
    .select({
      id: mp.id,
      display_name: mp.displayName,
      endpoint: mp.endpoint,
      auth_type: mp.authType,
      default_model: mp.defaultModel,
      models: mp.models,
      api_key_sealed: mp.apiKeySealed,
      prices: mp.prices,
    })
    .from(a)
    .innerJoin(mp, eq(mp.id, a.profileId))
    .where(eq(a.agentId, agentId));
  if (!row) return null;
  const { prices, ...profile } = row;
  return prices ? { ...profile, prices } : profile;
}

// ── admin API ──────────────────────────────────────────────────────────────────────────

export type ProfileRow = Tables["modelProfiles"]["$inferSelect"];
type Ws = { id: string; name: string };

/** A profile as the admin API shows it: whether a key is held and to whom it is sealed, never the key. */
export function presentProfile(p: ProfileRow) {
  return {
    id: p.id,
    display_name: p.displayName,
    endpoint: p.endpoint,
    auth_type: p.authType,
    default_model: p.defaultModel,
    models: p.models,
    workspace_id: p.workspaceId,
    has_api_key: p.apiKeySealed !== null,
    sealed_to: p.sealedTo,
    prices: p.prices ?? {},
    created_at: new Date(p.createdAt).toISOString(),
  };
}

/** A profile as its admin events show it: the sealed key only as a digest. */
function eventView(p: ProfileRow) {
  const { has_api_key: _, ...view } = presentProfile(p);
  return { ...view, api_key_sealed: p.apiKeySealed === null ? null : secretDigest(p.apiKeySealed) };
}

type ProfileAction = "model_profile.create" | "model_profile.api_key_set" | "model_profile.prices_set" | "model_profile.assign";

async function recordProfileChange(tx: Db, by: Acting, action: ProfileAction, p: ProfileRow, change: { before?: unknown; after?: unknown }): Promise<void> {
  await recordChange(tx, by, { orgId: p.orgId, workspaceId: p.workspaceId, action, target: { type: "model_profile", id: p.id, name: p.displayName }, ...change });
}

/** The profile as stored now, read in the changing transaction (the event's before). */
async function storedProfile(tx: Db, orgId: string, id: string): Promise<ProfileRow> {
  const mp = tables(tx).modelProfiles;
  const [row] = await tx
    .select()
    .from(mp)
    .where(and(eq(mp.id, id), eq(mp.orgId, orgId)));
  if (!row) throw new SvcError("not_found", `model profile "${id}" not found`);
  return row;
}

export async function listProfiles(db: Db, orgId: string, workspaceId?: string): Promise<ProfileRow[]> {
  const mp = tables(db).modelProfiles;
  return db
    .select()
    .from(mp)
    .where(workspaceId ? and(eq(mp.orgId, orgId), eq(mp.workspaceId, workspaceId)) : eq(mp.orgId, orgId))
    .orderBy(mp.id);
}

/** A profile by id (`mp_…`) or display name, optionally within one workspace; 404 otherwise, 409 when a name is ambiguous. */
export async function resolveProfile(db: Db, orgId: string, idOrName: string, workspaceId?: string): Promise<ProfileRow> {
  const mp = tables(db).modelProfiles;
  const conds = [eq(mp.orgId, orgId), hasPrefix(idOrName, "modelProfile") ? eq(mp.id, idOrName) : eq(mp.displayName, idOrName)];
  if (workspaceId) conds.push(eq(mp.workspaceId, workspaceId));
  const rows = await db
    .select()
    .from(mp)
    .where(and(...conds));
  if (rows.length === 0) throw new SvcError("not_found", `model profile "${idOrName}" not found`);
  if (rows.length > 1) throw new SvcError("conflict", `several workspaces have a model profile named "${idOrName}"; pass workspace`);
  return rows[0]!;
}

function refuse(path: string, message: string): never {
  throw new SvcError("validation_failed", message, { errors: [{ path, message }] });
}

function endpointOrThrow(raw: string): string {
  const check = checkEndpoint(raw);
  if (!check.ok) throw new SvcError(check.code, check.message, { errors: [{ path: "/endpoint", message: check.message }] });
  return check.endpoint;
}

function modelsOrThrow(defaultModel: string, models: string[] | undefined): string[] {
  const list = [...new Set((models ?? [defaultModel]).map((m) => m.trim()))];
  if (list.some((m) => !m)) refuse("/models", "models must not contain empty ids");
  if (!list.includes(defaultModel)) refuse("/models", `models must include the default model "${defaultModel}"`);
  return list;
}

/** Live replicas able to receive a sealed key in the workspace (every live installation's), id → credential-sync recipient. */
async function replicasInWorkspace(db: Db, workspaceId: string, liveSince: number): Promise<Map<string, string>> {
  return new Map((await recipientsInScope(db, workspaceId, null, { liveSince })).map((r) => [r.replica_id, r.recipient]));
}

/** Checks the form of the sealed key before any query: base64 of an age file. */
function sealedKeyText(input: { api_key_sealed?: string }): string {
  if (input.api_key_sealed === undefined) refuse("/api_key_sealed", 'auth_type "api_key" needs api_key_sealed (the key sealed to the runtimes) and sealed_to');
  checkSealedKey(input.api_key_sealed);
  return input.api_key_sealed;
}

/**
 * The sealed key, the replicas it is sealed to (each a live runtime of the workspace now) and
 * their credential-sync recipients now. Run it in the transaction that stores the key, so the
 * list is checked against the replicas as they are when it is written.
 */
async function sealedKeyOrThrow(db: Db, ws: Ws, apiKeySealed: string, sealedTo: string[] | undefined, liveSince: number) {
  const known = await replicasInWorkspace(db, ws.id, liveSince);
  if (known.size === 0) {
    throw new SvcError("no_runtime_recipient", `no runtime in workspace "${ws.name}" can receive the key yet: deploy a runtime (it registers a credential-sync key at bootstrap) first`);
  }
  return { apiKeySealed, ...checkSealedTo(sealedTo ?? [], known) };
}

export type ProfileInput = {
  display_name: string;
  endpoint: string;
  auth_type: "none" | "api_key";
  default_model: string;
  models?: string[];
  api_key_sealed?: string;
  sealed_to?: string[];
  api_key?: unknown;
  prices?: ModelPrices;
};

export type ModelPrices = Record<string, { prompt: number; completion: number }>;

function pricesOrThrow(prices: ModelPrices | undefined, models: string[]): ModelPrices | null {
  if (!prices || Object.keys(prices).length === 0) return null;
  const unknown = Object.keys(prices).filter((m) => !models.includes(m));
  if (unknown.length > 0) refuse("/prices", `prices name models the profile does not offer: ${unknown.join(", ")} (offered: ${models.join(", ")})`);
  return prices;
}

/**
 * Creates a profile. The replicas a sealed key names are checked, the profile inserted and the
 * revision bumped in one transaction; the (workspace, display name) unique index decides
 * between two concurrent creations of one name.
 */
export async function createProfile(db: Db, orgId: string, ws: Ws, input: ProfileInput, liveSince: number, by: Acting): Promise<ProfileRow> {
  refusePlaintextKey(input);
  const displayName = input.display_name.trim();
  if (!displayName) refuse("/display_name", "display_name is empty");
  const endpoint = endpointOrThrow(input.endpoint);
  const defaultModel = input.default_model.trim();
  const models = modelsOrThrow(defaultModel, input.models);
  const prices = pricesOrThrow(input.prices, models);
  let sealed: string | null = null;
  if (input.auth_type === "api_key") sealed = sealedKeyText(input);
  else if (input.api_key_sealed !== undefined || input.sealed_to?.length) refuse("/api_key_sealed", 'auth_type "none" takes no API key; use auth_type "api_key"');
  const id = newId("modelProfile");
  return db.transaction(async (tx) => {
    const mp = tables(tx).modelProfiles;
    let key: { apiKeySealed: string | null; sealedTo: string[]; sealedRecipients: string[] } = { apiKeySealed: null, sealedTo: [], sealedRecipients: [] };
    if (sealed !== null) key = await sealedKeyOrThrow(tx, ws, sealed, input.sealed_to, liveSince);
    const [created] = await tx
      .insert(mp)
      .values({ id, orgId, workspaceId: ws.id, displayName, endpoint, authType: input.auth_type, defaultModel, models, prices, ...key })
      .onConflictDoNothing()
      .returning();
    if (!created) {
      const [clash] = await tx
        .select({ id: mp.id })
        .from(mp)
        .where(and(eq(mp.workspaceId, ws.id), eq(mp.displayName, displayName)))
        .limit(1);
      throw new SvcError("conflict", `a model profile named "${displayName}" already exists in workspace "${ws.name}"${clash ? ` (${clash.id})` : ""}`);
    }
    await bumpRevision(tx, orgId);
    await recordProfileChange(tx, by, "model_profile.create", created, { after: eventView(created) });
    return created;
  });
}

/**
 * Replaces the sealed key (for example re-sealed to include new replicas). The key and the
 * replicas it is sealed to are checked and written together, in the transaction that bumps the revision.
 */
export async function setProfileApiKey(
  db: Db,
  orgId: string,
  profile: ProfileRow,
  input: { api_key_sealed: string; sealed_to: string[]; api_key?: unknown },
  liveSince: number,
  by: Acting,
): Promise<ProfileRow> {
  refusePlaintextKey(input);
  if (profile.authType !== "api_key") refuse("/api_key_sealed", `model profile "${profile.displayName}" uses auth_type "none" and takes no API key`);
  const sealed = sealedKeyText(input);
  return db.transaction(async (tx) => {
    const mp = tables(tx).modelProfiles;
    const ws = await resolveWorkspace(tx, orgId, profile.workspaceId);
    const key = await sealedKeyOrThrow(tx, ws, sealed, input.sealed_to, liveSince);
    const before = await storedProfile(tx, orgId, profile.id);
    const [updated] = await tx
      .update(mp)
      .set(key)
      .where(and(eq(mp.id, profile.id), eq(mp.orgId, orgId)))
      .returning();
    await bumpRevision(tx, orgId);
    await recordProfileChange(tx, by, "model_profile.api_key_set", updated!, { before: eventView(before), after: eventView(updated!) });
    return updated!;
  });
}

/** Replaces the profile's prices (per 1M tokens; `{}` removes them); the proxies get them with the next bundle. */
export async function setProfilePrices(db: Db, orgId: string, profile: ProfileRow, input: { prices: ModelPrices }, by: Acting): Promise<ProfileRow> {
  const prices = pricesOrThrow(input.prices, profile.models);
  return db.transaction(async (tx) => {
    const mp = tables(tx).modelProfiles;
    const before = await storedProfile(tx, orgId, profile.id);
    const [updated] = await tx
      .update(mp)
      .set({ prices })
      .where(and(eq(mp.id, profile.id), eq(mp.orgId, orgId)))
      .returning();
    await bumpRevision(tx, orgId);
    await recordProfileChange(tx, by, "model_profile.prices_set", updated!, { before: { prices: before.prices ?? {} }, after: { prices: updated!.prices ?? {} } });
    return updated!;
  });
}

/**
 * Assigns the profile to an agent of the same workspace, replacing the agent's previous profile
 * (one row per agent, upserted); the agent check, the upsert and the revision bump are one transaction.
 */
export async function assignProfile(db: Db, orgId: string, profile: ProfileRow, agentId: string, by: Acting) {
  await db.transaction(async (tx) => {
    const a = tables(tx).modelProfileAssignments;
    const ws = await resolveWorkspace(tx, orgId, profile.workspaceId);
    await getAgentInWorkspace(tx, orgId, agentId, ws);
    const [previous] = await tx.select({ profileId: a.profileId }).from(a).where(eq(a.agentId, agentId));
    await tx
      .insert(a)
      .values({ agentId, profileId: profile.id, assignedAt: by.at })
      .onConflictDoUpdate({ target: a.agentId, set: { profileId: profile.id, assignedAt: by.at } });
    await bumpRevision(tx, orgId);
    if (previous?.profileId !== profile.id) {
      await recordProfileChange(tx, by, "model_profile.assign", profile, {
        before: { agent_id: agentId, profile_id: previous?.profileId ?? null },
        after: { agent_id: agentId, profile_id: profile.id },
      });
    }
  });
  return { agent_id: agentId, profile_id: profile.id };
}

/** The agent's profile, or null; the agent must be of this organization (and workspace, when given). */
export async function assignmentOf(db: Db, orgId: string, agentId: string, ws?: Ws) {
  if (ws) await getAgentInWorkspace(db, orgId, agentId, ws);
  else await getAgent(db, orgId, agentId);
  const { modelProfiles: mp, modelProfileAssignments: a } = tables(db);
  const [row] = await db
    .select({ profile: mp })
    .from(a)
    .innerJoin(mp, eq(mp.id, a.profileId))
    .where(and(eq(a.agentId, agentId), eq(mp.orgId, orgId)));
  return { agent_id: agentId, profile: row ? presentProfile(row.profile) : null };
}

/** Agents the profile is assigned to. */
export async function assignedAgentIds(db: Db, profileId: string): Promise<string[]> {
  const a = tables(db).modelProfileAssignments;
  const rows = await db.select({ agentId: a.agentId }).from(a).where(eq(a.profileId, profileId)).orderBy(a.agentId);
  return rows.map((r) => r.agentId);
}
