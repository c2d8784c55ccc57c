// Model profiles: an OpenAI-compatible endpoint, its models, and (for api_key auth) the key
// sealed to the runtimes' credential-sync keys. The service never sees the key in plaintext.
import { and, eq } from "drizzle-orm";
import type { BundleModelProfile } from "../../contract/bundle.ts";
import { SvcError } from "../../contract/errors.ts";
import { hasPrefix, newId } from "../../contract/ids.ts";
import { getAgent, getAgentInWorkspace } from "../agents/service.ts";
import { type Db, schema } from "../db/index.ts";
import { bumpRevision } from "../organizations/service.ts";
import { recipientsInScope } from "../runtime/replicas.ts";
import { checkEndpoint } from "./endpoint.ts";
import { checkSealedKey, checkSealedTo, refusePlaintextKey } from "./sealed-key.ts";

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

// ── admin API ──────────────────────────────────────────────────────────────────────────

export type ProfileRow = typeof schema.modelProfiles.$inferSelect;
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
    created_at: new Date(p.createdAt).toISOString(),
  };
}

export function listProfiles(db: Db, orgId: string, workspaceId?: string): ProfileRow[] {
  const mp = schema.modelProfiles;
  return db
    .select()
    .from(mp)
    .where(workspaceId ? and(eq(mp.orgId, orgId), eq(mp.workspaceId, workspaceId)) : eq(mp.orgId, orgId))
    .orderBy(mp.id)
    .all();
}

/** A profile by id (`mp_…`) or display name, optionally within one workspace; 404 otherwise, 409 when a name is ambiguous. */
export function resolveProfile(db: Db, orgId: string, idOrName: string, workspaceId?: string): ProfileRow {
  const mp = schema.modelProfiles;
  const conds = [eq(mp.orgId, orgId), hasPrefix(idOrName, "modelProfile") ? eq(mp.id, idOrName) : eq(mp.displayName, idOrName)];
  if (workspaceId) conds.push(eq(mp.workspaceId, workspaceId));
  const rows = db.select().from(mp).where(and(...conds)).all();
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

/** Replica ids able to receive a sealed key in the workspace (every live installation's replicas). */
function replicaIdsInWorkspace(db: Db, workspaceId: string): Set<string> {
  return new Set(recipientsInScope(db, workspaceId).map((r) => r.replica_id));
}

function sealedKeyOrThrow(db: Db, ws: Ws, input: { api_key_sealed?: string; sealed_to?: string[] }) {
  if (input.api_key_sealed === undefined) refuse("/api_key_sealed", 'auth_type "api_key" needs api_key_sealed (the key sealed to the runtimes) and sealed_to');
  checkSealedKey(input.api_key_sealed);
  const known = replicaIdsInWorkspace(db, ws.id);
  if (known.size === 0) {
    throw new SvcError("no_runtime_recipient", `no runtime in workspace "${ws.name}" can receive the key yet: deploy a runtime (it registers a credential-sync key at bootstrap) first`);
  }
  return { apiKeySealed: input.api_key_sealed, sealedTo: checkSealedTo(input.sealed_to ?? [], known) };
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
};

export function createProfile(db: Db, orgId: string, ws: Ws, input: ProfileInput): ProfileRow {
  refusePlaintextKey(input);
  const displayName = input.display_name.trim();
  if (!displayName) refuse("/display_name", "display_name is empty");
  const endpoint = endpointOrThrow(input.endpoint);
  const defaultModel = input.default_model.trim();
  const models = modelsOrThrow(defaultModel, input.models);
  let key: { apiKeySealed: string | null; sealedTo: string[] } = { apiKeySealed: null, sealedTo: [] };
  if (input.auth_type === "api_key") key = sealedKeyOrThrow(db, ws, input);
  else if (input.api_key_sealed !== undefined || input.sealed_to?.length) refuse("/api_key_sealed", 'auth_type "none" takes no API key; use auth_type "api_key"');
  const mp = schema.modelProfiles;
  const clash = db.select({ id: mp.id }).from(mp).where(and(eq(mp.workspaceId, ws.id), eq(mp.displayName, displayName))).get();
  if (clash) throw new SvcError("conflict", `a model profile named "${displayName}" already exists in workspace "${ws.name}" (${clash.id})`);
  const id = newId("modelProfile");
  db.transaction(() => {
    db.insert(mp).values({ id, orgId, workspaceId: ws.id, displayName, endpoint, authType: input.auth_type, defaultModel, models, ...key }).run();
    bumpRevision(db, orgId);
  });
  return db.select().from(mp).where(eq(mp.id, id)).get()!;
}

/** Replaces the sealed key (for example re-sealed to include new replicas). */
export function setProfileApiKey(db: Db, orgId: string, profile: ProfileRow, input: { api_key_sealed: string; sealed_to: string[]; api_key?: unknown }): ProfileRow {
  refusePlaintextKey(input);
  if (profile.authType !== "api_key") refuse("/api_key_sealed", `model profile "${profile.displayName}" uses auth_type "none" and takes no API key`);
  const ws = db.select().from(schema.workspaces).where(eq(schema.workspaces.id, profile.workspaceId)).get()!;
  const key = sealedKeyOrThrow(db, ws, input);
  const mp = schema.modelProfiles;
  db.transaction(() => {
    db.update(mp).set(key).where(eq(mp.id, profile.id)).run();
    bumpRevision(db, orgId);
  });
  return db.select().from(mp).where(eq(mp.id, profile.id)).get()!;
}

/** Assigns the profile to an agent of the same workspace, replacing the agent's previous profile. */
export function assignProfile(db: Db, orgId: string, profile: ProfileRow, agentId: string, now: number) {
  const ws = db.select().from(schema.workspaces).where(eq(schema.workspaces.id, profile.workspaceId)).get()!;
  getAgentInWorkspace(db, orgId, agentId, ws);
  const a = schema.modelProfileAssignments;
  db.transaction(() => {
    db.insert(a).values({ agentId, profileId: profile.id, assignedAt: now }).onConflictDoUpdate({ target: a.agentId, set: { profileId: profile.id, assignedAt: now } }).run();
    bumpRevision(db, orgId);
  });
  return { agent_id: agentId, profile_id: profile.id };
}

/** The agent's profile, or null; the agent must be of this organization (and workspace, when given). */
export function assignmentOf(db: Db, orgId: string, agentId: string, ws?: Ws) {
  if (ws) getAgentInWorkspace(db, orgId, agentId, ws);
  else getAgent(db, orgId, agentId);
  const mp = schema.modelProfiles;
  const row = db
    .select({ profile: mp })
    .from(schema.modelProfileAssignments)
    .innerJoin(mp, eq(mp.id, schema.modelProfileAssignments.profileId))
    .where(and(eq(schema.modelProfileAssignments.agentId, agentId), eq(mp.orgId, orgId)))
    .get();
  return { agent_id: agentId, profile: row ? presentProfile(row.profile) : null };
}

/** Agents the profile is assigned to. */
export function assignedAgentIds(db: Db, profileId: string): string[] {
  const a = schema.modelProfileAssignments;
  return db.select({ agentId: a.agentId }).from(a).where(eq(a.profileId, profileId)).orderBy(a.agentId).all().map((r) => r.agentId);
}
