// MCP tool servers (issue 13): an http (Streamable HTTP) or stdio server whose tools an agent's
// runtimes serve as `<server>.<tool>`, with its secrets (headers or environment) sealed to the
// runtimes' credential-sync keys exactly like a model profile's API key: the service stores
// ciphertext and the names it holds, never a value. Every change bumps the revision, so the
// runtimes get it with their next bundle.
import { and, eq, inArray } from "drizzle-orm";
import type { BundleToolServer } from "../../contract/bundle.ts";
import { SvcError } from "../../contract/errors.ts";
import { hasPrefix, newId } from "../../contract/ids.ts";
import { type RuleCheck, type Transport, checkArgs, checkCommand, checkSecretNames, checkServerName, checkServerUrl, checkToolName } from "../../contract/tool-server.ts";
import { getAgent, getAgentInWorkspace } from "../agents/service.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import { checkSealedKey, checkSealedTo } from "../model-profiles/sealed-key.ts";
import { bumpRevision, resolveWorkspace } from "../organizations/service.ts";
import { recipientsInScope } from "../runtime/replicas.ts";
import { forgetServerTools } from "./catalogue.ts";

export type ServerRow = Tables["toolServers"]["$inferSelect"];
type Ws = { id: string; name: string };
type Access = "read" | "write";

export const PLAINTEXT_SECRETS_MESSAGE =
  "the service never receives plaintext secrets: seal them to the runtimes' credential-sync keys (GET runtime-recipients) and send secrets_sealed with secret_names and sealed_to; `svc tool-servers create --bearer` or `--secrets` does this";

function refuse(path: string, message: string): never {
  throw new SvcError("validation_failed", message, { errors: [{ path, message }] });
}
function must(check: RuleCheck): void {
  if (!check.ok) refuse(check.path, check.message);
}
function refusePlaintext(body: { secrets?: unknown; headers?: unknown; env?: unknown }): void {
  for (const k of ["secrets", "headers", "env"] as const) if (body[k] !== undefined) refuse(`/${k}`, PLAINTEXT_SECRETS_MESSAGE);
}

/** A server as the admin API shows it: the names of its secrets and to whom they are sealed, never the ciphertext. */
export function presentServer(s: ServerRow) {
  return {
    id: s.id,
    name: s.name,
    workspace_id: s.workspaceId,
    transport: s.transport,
    url: s.url,
    command: s.command,
    args: s.args,
    has_secrets: s.secretsSealed !== null,
    secret_names: s.secretNames,
    sealed_to: s.sealedTo,
    allowed_tools: s.allowedTools,
    access_overrides: s.accessOverrides,
    created_at: new Date(s.createdAt).toISOString(),
  };
}

/** The servers assigned to an agent, as the bundle carries them (sorted by name). */
export async function serversForAgent(db: Db, agentId: string): Promise<BundleToolServer[]> {
  const { toolServers: s, toolServerAssignments: a } = tables(db);
  const rows = await db.select({ s }).from(a).innerJoin(s, eq(s.id, a.serverId)).where(eq(a.agentId, agentId)).orderBy(s.name);
  return rows.map(({ s: r }) => ({
    id: r.id,
    name: r.name,
    transport: r.transport,
    url: r.url,
    command: r.command,
    args: [...r.args],
    secrets_sealed: r.secretsSealed,
    allowed_tools: r.allowedTools ? [...r.allowedTools] : null,
    access_overrides: { ...r.accessOverrides },
  }));
}

export async function listServers(db: Db, orgId: string, workspaceId?: string): Promise<ServerRow[]> {
  const s = tables(db).toolServers;
  return db
    .select()
    .from(s)
    .where(workspaceId ? and(eq(s.orgId, orgId), eq(s.workspaceId, workspaceId)) : eq(s.orgId, orgId))
    .orderBy(s.name, s.id);
}

/** A server by id (`ts_…`) or name, optionally within one workspace; 404 otherwise, 409 when a name is ambiguous. */
export async function resolveServer(db: Db, orgId: string, idOrName: string, workspaceId?: string): Promise<ServerRow> {
  const s = tables(db).toolServers;
  const conds = [eq(s.orgId, orgId), hasPrefix(idOrName, "toolServer") ? eq(s.id, idOrName) : eq(s.name, idOrName)];
  if (workspaceId) conds.push(eq(s.workspaceId, workspaceId));
  const rows = await db.select().from(s).where(and(...conds));
  if (rows.length === 0) throw new SvcError("not_found", `tool server "${idOrName}" not found${workspaceId ? " in this workspace" : ""}; list them with \`svc tool-servers list\``);
  if (rows.length > 1) throw new SvcError("conflict", `several workspaces have a tool server named "${idOrName}"; pass workspace`);
  return rows[0]!;
}

type ToolRules = { allowed_tools?: string[] | null; access_overrides?: Record<string, Access> };

function toolRulesOrThrow(input: ToolRules): { allowedTools: string[] | null; accessOverrides: Record<string, Access> } {
  const allowed = input.allowed_tools ? [...new Set(input.allowed_tools)] : null;
  allowed?.forEach((t, i) => must(checkToolName(t, `/allowed_tools/${i}`)));
  const overrides = input.access_overrides ?? {};
  for (const t of Object.keys(overrides)) must(checkToolName(t, `/access_overrides/${t}`));
  if (allowed) {
    const outside = Object.keys(overrides).filter((t) => !allowed.includes(t));
    if (outside.length) refuse("/access_overrides", `access_overrides names tools outside allowed_tools: ${outside.join(", ")} (they would never be served)`);
  }
  return { allowedTools: allowed ? allowed.sort() : null, accessOverrides: Object.fromEntries(Object.entries(overrides).sort(([a], [b]) => (a < b ? -1 : 1))) };
}

type SealedInput = { secrets_sealed?: string; secret_names?: string[]; sealed_to?: string[] };

/** The form of the sealed secrets, before any query. */
function sealedFormOrThrow(transport: Transport, input: SealedInput): { sealed: string; names: string[] } | null {
  if (input.secrets_sealed === undefined) {
    if (input.secret_names?.length || input.sealed_to?.length) refuse("/secrets_sealed", "secret_names and sealed_to come with secrets_sealed");
    return null;
  }
  checkSealedKey(input.secrets_sealed, "secrets_sealed");
  must(checkSecretNames(transport, input.secret_names ?? []));
  return { sealed: input.secrets_sealed, names: input.secret_names! };
}

/** The replicas the secrets are sealed to, each a live runtime of the workspace now, and their recipients now. */
async function sealedToOrThrow(db: Db, ws: Ws, sealedTo: string[] | undefined, liveSince: number) {
  const known = new Map((await recipientsInScope(db, ws.id, null, { liveSince })).map((r) => [r.replica_id, r.recipient]));
  if (known.size === 0) {
    throw new SvcError("no_runtime_recipient", `no runtime in workspace "${ws.name}" can receive the secrets yet: deploy a runtime (it registers a credential-sync key at bootstrap) first`);
  }
  return checkSealedTo(sealedTo ?? [], known);
}

export type ServerInput = ToolRules &
  SealedInput & { name: string; transport: Transport; url?: string; command?: string; args?: string[]; secrets?: unknown; headers?: unknown; env?: unknown };

/** The transport's endpoint: an https URL (http) or a command with args (stdio), never both. */
function endpointOrThrow(input: ServerInput): { url: string | null; command: string | null; args: string[] } {
  if (input.transport === "http") {
    if (input.command !== undefined || input.args?.length) refuse("/command", 'transport "http" takes a url, not a command or args');
    if (input.url === undefined) refuse("/url", 'transport "http" needs url: the server\'s Streamable HTTP endpoint (https)');
    const check = checkServerUrl(input.url);
    if (!check.ok) throw new SvcError(check.code, check.message, { errors: [{ path: "/url", message: check.message }] });
    return { url: check.endpoint, command: null, args: [] };
  }
  if (input.url !== undefined) refuse("/url", 'transport "stdio" takes a command (installed in the image) and args, not a url');
  if (input.command === undefined) refuse("/command", 'transport "stdio" needs command: the program installed in the image layer');
  must(checkCommand(input.command));
  const args = input.args ?? [];
  must(checkArgs(args));
  return { url: null, command: input.command, args };
}

/**
 * Creates a server. The replicas its secrets name are checked, the row inserted and the revision
 * bumped in one transaction; the (workspace, name) unique index decides between two
 * concurrent creations of one name.
 */
export async function createServer(db: Db, orgId: string, ws: Ws, input: ServerInput, liveSince: number): Promise<ServerRow> {
  refusePlaintext(input);
  must(checkServerName(input.name));
  const endpoint = endpointOrThrow(input);
  const rules = toolRulesOrThrow(input);
  const form = sealedFormOrThrow(input.transport, input);
  const id = newId("toolServer");
  return db.transaction(async (tx) => {
    const s = tables(tx).toolServers;
    const sealed = form ? { secretsSealed: form.sealed, secretNames: form.names, ...(await sealedToOrThrow(tx, ws, input.sealed_to, liveSince)) } : {};
    const [created] = await tx
      .insert(s)
      .values({ id, orgId, workspaceId: ws.id, name: input.name, transport: input.transport, ...endpoint, ...rules, ...sealed })
      .onConflictDoNothing()
      .returning();
    if (!created) {
      const [clash] = await tx.select({ id: s.id }).from(s).where(and(eq(s.workspaceId, ws.id), eq(s.name, input.name))).limit(1);
      throw new SvcError("conflict", `a tool server named "${input.name}" already exists in workspace "${ws.name}"${clash ? ` (${clash.id})` : ""}; pick another name or delete it first`);
    }
    await bumpRevision(tx, orgId);
    return created;
  });
}

async function updateServer(tx: Db, orgId: string, server: ServerRow, set: Partial<ServerRow>): Promise<ServerRow> {
  const s = tables(tx).toolServers;
  const [updated] = await tx.update(s).set(set).where(and(eq(s.id, server.id), eq(s.orgId, orgId))).returning();
  if (!updated) throw new SvcError("not_found", `tool server "${server.id}" not found`);
  await bumpRevision(tx, orgId);
  return updated;
}

/** Replaces the sealed secrets (re-sealed to new runtimes, or new values), checked and written with the revision bump. */
export async function setServerSecrets(db: Db, orgId: string, server: ServerRow, input: SealedInput & { secrets?: unknown; headers?: unknown; env?: unknown }, liveSince: number): Promise<ServerRow> {
  refusePlaintext(input);
  const form = sealedFormOrThrow(server.transport, input)!;
  return db.transaction(async (tx) => {
    const ws = await resolveWorkspace(tx, orgId, server.workspaceId);
    const to = await sealedToOrThrow(tx, ws, input.sealed_to, liveSince);
    return updateServer(tx, orgId, server, { secretsSealed: form.sealed, secretNames: form.names, ...to });
  });
}

/** Replaces the allow-list and the access overrides. */
export async function setServerTools(db: Db, orgId: string, server: ServerRow, input: ToolRules): Promise<ServerRow> {
  const rules = toolRulesOrThrow(input);
  return db.transaction(async (tx) => updateServer(tx, orgId, server, rules));
}

export type ServerChange = ToolRules &
  SealedInput & { name?: unknown; transport?: unknown; url?: string; command?: string; args?: string[]; secrets?: unknown; headers?: unknown; env?: unknown };

/**
 * Changes the fields given (PATCH), the others stay: the endpoint of the server's transport
 * (http: url; stdio: command, args), the sealed secrets, the allow-list, the access overrides.
 * Each is checked as at creation, the allow-list and overrides together as they will be
 * stored; the name and the transport never change (tool names and policies hang on them).
 */
export async function changeServer(db: Db, orgId: string, server: ServerRow, input: ServerChange, liveSince: number): Promise<ServerRow> {
  refusePlaintext(input);
  if (input.name !== undefined) refuse("/name", `a tool server's name cannot change: its tools are governed as tool:${server.name}.<tool>; create a server with the new name instead`);
  if (input.transport !== undefined) refuse("/transport", "a tool server's transport cannot change; create another server for the other transport");
  const set: Partial<ServerRow> = {};
  if (server.transport === "http") {
    if (input.command !== undefined || input.args !== undefined) refuse(input.command !== undefined ? "/command" : "/args", `tool server "${server.name}" is an http server: change its url, not a command or args`);
    if (input.url !== undefined) set.url = endpointOrThrow({ name: server.name, transport: "http", url: input.url }).url;
  } else {
    if (input.url !== undefined) refuse("/url", `tool server "${server.name}" is a stdio server: change its command or args, not a url`);
    if (input.command !== undefined) must(checkCommand((set.command = input.command)));
    if (input.args !== undefined) must(checkArgs((set.args = input.args)));
  }
  if (input.allowed_tools !== undefined || input.access_overrides !== undefined) {
    Object.assign(set, toolRulesOrThrow({ allowed_tools: input.allowed_tools === undefined ? server.allowedTools : input.allowed_tools, access_overrides: input.access_overrides ?? server.accessOverrides }));
  }
  const form = sealedFormOrThrow(server.transport, input);
  if (!form && Object.keys(set).length === 0) refuse("/", "nothing to change: give url (http), command or args (stdio), secrets_sealed with secret_names and sealed_to, allowed_tools or access_overrides");
  return db.transaction(async (tx) => {
    const sealed = form ? { secretsSealed: form.sealed, secretNames: form.names, ...(await sealedToOrThrow(tx, await resolveWorkspace(tx, orgId, server.workspaceId), input.sealed_to, liveSince)) } : {};
    return updateServer(tx, orgId, server, { ...set, ...sealed });
  });
}

/** Assigns the server to an agent of its workspace (idempotent); the agent check, the insert and the bump are one transaction. */
export async function assignServer(db: Db, orgId: string, server: ServerRow, agentId: string, now: number) {
  await db.transaction(async (tx) => {
    const a = tables(tx).toolServerAssignments;
    await getAgentInWorkspace(tx, orgId, agentId, await resolveWorkspace(tx, orgId, server.workspaceId));
    await tx.insert(a).values({ agentId, serverId: server.id, assignedAt: now }).onConflictDoNothing();
    await bumpRevision(tx, orgId);
  });
  return { agent_id: agentId, server_id: server.id, assigned: true };
}

/** Takes the server away from an agent; 404 when it was not assigned. */
export async function unassignServer(db: Db, orgId: string, server: ServerRow, agentId: string) {
  await db.transaction(async (tx) => {
    const a = tables(tx).toolServerAssignments;
    await getAgent(tx, orgId, agentId);
    const gone = await tx.delete(a).where(and(eq(a.agentId, agentId), eq(a.serverId, server.id))).returning({ agentId: a.agentId });
    if (gone.length === 0) throw new SvcError("not_found", `tool server "${server.name}" is not assigned to agent ${agentId}`);
    await bumpRevision(tx, orgId);
  });
  return { agent_id: agentId, server_id: server.id, assigned: false };
}

/** Deletes a server no agent uses; while assigned it is a 409 naming the agents, so no runtime loses tools by surprise. */
export async function deleteServer(db: Db, orgId: string, server: ServerRow): Promise<void> {
  await db.transaction(async (tx) => {
    const { toolServers: s, toolServerAssignments: a } = tables(tx);
    const agents = (await tx.select({ agentId: a.agentId }).from(a).where(eq(a.serverId, server.id)).orderBy(a.agentId)).map((r) => r.agentId);
    if (agents.length) {
      throw new SvcError("conflict", `tool server "${server.name}" is assigned to ${agents.join(", ")}; unassign it first (svc tool-servers unassign ${server.name} --agent <agent_id>)`, { agents });
    }
    await forgetServerTools(tx, server.id);
    const gone = await tx.delete(s).where(and(eq(s.id, server.id), eq(s.orgId, orgId))).returning({ id: s.id });
    if (gone.length === 0) throw new SvcError("not_found", `tool server "${server.id}" not found`);
    await bumpRevision(tx, orgId);
  });
}

/** Agents the server is assigned to. */
export async function assignedAgentIds(db: Db, serverId: string): Promise<string[]> {
  const a = tables(db).toolServerAssignments;
  return (await db.select({ agentId: a.agentId }).from(a).where(eq(a.serverId, serverId)).orderBy(a.agentId)).map((r) => r.agentId);
}

/** The servers assigned to an agent of the organization (admin view). */
export async function serversOfAgent(db: Db, orgId: string, agentId: string) {
  await getAgent(db, orgId, agentId);
  const a = tables(db).toolServerAssignments;
  const ids = (await db.select({ id: a.serverId }).from(a).where(eq(a.agentId, agentId))).map((r) => r.id);
  if (ids.length === 0) return [];
  const s = tables(db).toolServers;
  return (await db.select().from(s).where(and(eq(s.orgId, orgId), inArray(s.id, ids))).orderBy(s.name)).map(presentServer);
}
