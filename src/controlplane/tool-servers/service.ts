// MCP tool servers (issue 13): an http (Streamable HTTP) or stdio server whose tools an agent's
// runtimes serve as `<server>.<tool>`, with its secrets (headers or environment) sealed to the
// runtimes' credential-sync keys exactly like a model profile's API key: the service stores
// ciphertext and the names it holds, never a value. Every change bumps the revision, so the
// runtimes get it with their next bundle.
import { and, eq, inArray } from "drizzle-orm";
import type { BundleToolServer } from "../../contract/bundle.ts";
import { SvcError } from "../../contract/errors.ts";
import { hasPrefix, newId } from "../../contract/ids.ts";
import { checkArgs, checkCommand, checkServerName } from "../../contract/tool-server.ts";
import { getAgent, getAgentInWorkspace } from "../agents/service.ts";
import { type Acting, recordChange, secretDigest } from "../audit/admin-events.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import { checkSealedTo } from "../model-profiles/sealed-key.ts";
import { bumpRevision, resolveWorkspace } from "../organizations/service.ts";
import { recipientsInScope } from "../installations/replicas.ts";
import { forgetServerTools } from "./catalogue.ts";
import type { Kms } from "../kms/index.ts";
import { createOauthSettings, forgetOauth } from "../tool-oauth/service.ts";
import {
  type AssertionInput,
  type SealedInput,
  type ServerInput,
  type ToolRules,
  assertionOrThrow,
  endpointOrThrow,
  must,
  oauthInputOrThrow,
  refuse,
  refusePlaintext,
  sealedFormOrThrow,
  toolRulesOrThrow,
} from "./input.ts";

export { PLAINTEXT_SECRETS_MESSAGE, type ServerInput } from "./input.ts";

export type ServerRow = Tables["toolServers"]["$inferSelect"];
type Ws = { id: string; name: string };
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
    auth: s.auth,
    assertion: s.assertionHeader === null ? null : { header: s.assertionHeader, audience: s.assertionAudience ?? s.url ?? "" },
    created_at: new Date(s.createdAt).toISOString(),
  };
}

/** A server as its admin events show it: the sealed secrets only as a digest. */
function eventView(s: ServerRow) {
  const { has_secrets: _, ...view } = presentServer(s);
  return { ...view, secrets_sealed: s.secretsSealed === null ? null : secretDigest(s.secretsSealed) };
}

type ServerAction = "tool_server.create" | "tool_server.update" | "tool_server.secrets_set" | "tool_server.tools_set" | "tool_server.delete" | "tool_server.assign" | "tool_server.unassign";

async function recordServerChange(tx: Db, by: Acting, action: ServerAction, s: ServerRow, change: { before?: unknown; after?: unknown }): Promise<void> {
  await recordChange(tx, by, { orgId: s.orgId, workspaceId: s.workspaceId, action, target: { type: "tool_server", id: s.id, name: s.name }, ...change });
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
    ...(r.auth === "oauth" ? { auth: "oauth" as const } : {}),
    // Absent, not null, when off: bundles of servers without assertions stay as they were.
    ...(r.assertionHeader !== null && r.url !== null ? { assertion: { header: r.assertionHeader, audience: r.assertionAudience ?? r.url } } : {}),
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
  const rows = await db
    .select()
    .from(s)
    .where(and(...conds));
  if (rows.length === 0) throw new SvcError("not_found", `tool server "${idOrName}" not found${workspaceId ? " in this workspace" : ""}; list them with \`svc tool-servers list\``);
  if (rows.length > 1) throw new SvcError("conflict", `several workspaces have a tool server named "${idOrName}"; pass workspace`);
  return rows[0]!;
}

/** The replicas the secrets are sealed to, each a live runtime of the workspace now, and their recipients now. */
async function sealedToOrThrow(db: Db, ws: Ws, sealedTo: string[] | undefined, liveSince: number) {
  const known = new Map((await recipientsInScope(db, ws.id, null, { liveSince })).map((r) => [r.replica_id, r.recipient]));
  if (known.size === 0) {
    throw new SvcError("no_runtime_recipient", `no runtime in workspace "${ws.name}" can receive the secrets yet: deploy a runtime (it registers a credential-sync key at bootstrap) first`);
  }
  return checkSealedTo(sealedTo ?? [], known);
}

/**
 * Creates a server. The replicas its secrets name are checked, the row inserted and the revision
 * bumped in one transaction; the (workspace, name) unique index decides between two
 * concurrent creations of one name.
 */
export async function createServer(db: Db, orgId: string, ws: Ws, input: ServerInput, liveSince: number, by: Acting, kms?: Kms): Promise<ServerRow> {
  refusePlaintext(input);
  must(checkServerName(input.name));
  const oauth = oauthInputOrThrow(input);
  const endpoint = endpointOrThrow(input);
  const rules = toolRulesOrThrow(input);
  const form = sealedFormOrThrow(input.transport, input);
  const assertion = assertionOrThrow(input.transport, { header: input.assertion_header ?? null, audience: input.assertion_audience ?? null }, form?.names ?? []);
  const id = newId("toolServer");
  return db.transaction(async (tx) => {
    const s = tables(tx).toolServers;
    const sealed = form ? { secretsSealed: form.sealed, secretNames: form.names, ...(await sealedToOrThrow(tx, ws, input.sealed_to, liveSince)) } : {};
    const [created] = await tx
      .insert(s)
      .values({ id, orgId, workspaceId: ws.id, name: input.name, transport: input.transport, ...endpoint, ...rules, ...sealed, ...assertion, auth: oauth ? "oauth" : "secrets" })
      .onConflictDoNothing()
      .returning();
    if (!created) {
      const [clash] = await tx
        .select({ id: s.id })
        .from(s)
        .where(and(eq(s.workspaceId, ws.id), eq(s.name, input.name)))
        .limit(1);
      throw new SvcError("conflict", `a tool server named "${input.name}" already exists in workspace "${ws.name}"${clash ? ` (${clash.id})` : ""}; pick another name or delete it first`);
    }
    if (oauth) {
      if (!kms) throw new SvcError("internal", "an OAuth tool server needs the KMS");
      await createOauthSettings(tx, { kms }, created, oauth);
    }
    await bumpRevision(tx, orgId);
    await recordServerChange(tx, by, "tool_server.create", created, { after: eventView(created) });
    return created;
  });
}

async function updateServer(tx: Db, orgId: string, server: ServerRow, set: Partial<ServerRow>, event: { by: Acting; action: ServerAction }): Promise<ServerRow> {
  const s = tables(tx).toolServers;
  const [before] = await tx
    .select()
    .from(s)
    .where(and(eq(s.id, server.id), eq(s.orgId, orgId)));
  const [updated] = await tx
    .update(s)
    .set(set)
    .where(and(eq(s.id, server.id), eq(s.orgId, orgId)))
    .returning();
  if (!before || !updated) throw new SvcError("not_found", `tool server "${server.id}" not found`);
  await bumpRevision(tx, orgId);
  await recordServerChange(tx, event.by, event.action, updated, { before: eventView(before), after: eventView(updated) });
  return updated;
}

/** Replaces the sealed secrets (re-sealed to new runtimes, or new values), checked and written with the revision bump. */
export async function setServerSecrets(
  db: Db,
  orgId: string,
  server: ServerRow,
  input: SealedInput & { secrets?: unknown; headers?: unknown; env?: unknown },
  liveSince: number,
  by: Acting,
): Promise<ServerRow> {
  refusePlaintext(input);
  if (server.auth === "oauth") refuse("/secrets_sealed", `tool server "${server.name}" uses OAuth: each user's calls carry that user's own token, so it takes no sealed secrets`);
  const form = sealedFormOrThrow(server.transport, input)!;
  // A new secret header may not take the assertion's header.
  assertionOrThrow(server.transport, { header: server.assertionHeader, audience: server.assertionAudience }, form.names);
  return db.transaction(async (tx) => {
    const ws = await resolveWorkspace(tx, orgId, server.workspaceId);
    const to = await sealedToOrThrow(tx, ws, input.sealed_to, liveSince);
    return updateServer(tx, orgId, server, { secretsSealed: form.sealed, secretNames: form.names, ...to }, { by, action: "tool_server.secrets_set" });
  });
}

/** Replaces the allow-list and the access overrides. */
export async function setServerTools(db: Db, orgId: string, server: ServerRow, input: ToolRules, by: Acting): Promise<ServerRow> {
  const rules = toolRulesOrThrow(input);
  return db.transaction(async (tx) => updateServer(tx, orgId, server, rules, { by, action: "tool_server.tools_set" }));
}

export type ServerChange = ToolRules &
  SealedInput &
  AssertionInput & { name?: unknown; transport?: unknown; url?: string; command?: string; args?: string[]; secrets?: unknown; headers?: unknown; env?: unknown };

/**
 * Changes the fields given (PATCH), the others stay: the endpoint of the server's transport
 * (http: url; stdio: command, args), the sealed secrets, the allow-list, the access overrides.
 * Each is checked as at creation, the allow-list and overrides together as they will be
 * stored; the name and the transport never change (tool names and policies hang on them).
 */
export async function changeServer(db: Db, orgId: string, server: ServerRow, input: ServerChange, liveSince: number, by: Acting): Promise<ServerRow> {
  refusePlaintext(input);
  if (input.name !== undefined) refuse("/name", `a tool server's name cannot change: its tools are governed as tool:${server.name}.<tool>; create a server with the new name instead`);
  if (input.transport !== undefined) refuse("/transport", "a tool server's transport cannot change; create another server for the other transport");
  const set: Partial<ServerRow> = {};
  if (server.transport === "http") {
    if (input.command !== undefined || input.args !== undefined)
      refuse(input.command !== undefined ? "/command" : "/args", `tool server "${server.name}" is an http server: change its url, not a command or args`);
    if (input.url !== undefined) set.url = endpointOrThrow({ name: server.name, transport: "http", url: input.url }).url;
  } else {
    if (input.url !== undefined) refuse("/url", `tool server "${server.name}" is a stdio server: change its command or args, not a url`);
    if (input.command !== undefined) must(checkCommand((set.command = input.command)));
    if (input.args !== undefined) must(checkArgs((set.args = input.args)));
  }
  if (input.allowed_tools !== undefined || input.access_overrides !== undefined) {
    Object.assign(
      set,
      toolRulesOrThrow({ allowed_tools: input.allowed_tools === undefined ? server.allowedTools : input.allowed_tools, access_overrides: input.access_overrides ?? server.accessOverrides }),
    );
  }
  if (server.auth === "oauth" && input.secrets_sealed !== undefined)
    refuse("/secrets_sealed", `tool server "${server.name}" uses OAuth: each user's calls carry that user's own token, so it takes no sealed secrets`);
  if (server.auth === "oauth" && input.assertion_header !== undefined && input.assertion_header !== null)
    refuse("/assertion_header", `tool server "${server.name}" uses OAuth: each user's calls carry that user's own token, not an identity assertion`);
  const form = sealedFormOrThrow(server.transport, input);
  if (input.assertion_header !== undefined || input.assertion_audience !== undefined || form) {
    const header = input.assertion_header === undefined ? server.assertionHeader : input.assertion_header;
    // Turning assertions off drops the audience with them; otherwise an audience not given stays.
    const audience = header === null ? null : input.assertion_audience === undefined ? server.assertionAudience : input.assertion_audience;
    const next = assertionOrThrow(server.transport, { header, audience }, form?.names ?? server.secretNames);
    if (input.assertion_header !== undefined || input.assertion_audience !== undefined) Object.assign(set, next);
  }
  if (!form && Object.keys(set).length === 0)
    refuse("/", "nothing to change: give url (http), command or args (stdio), secrets_sealed with secret_names and sealed_to, allowed_tools, access_overrides, assertion_header or assertion_audience");
  return db.transaction(async (tx) => {
    const sealed = form
      ? { secretsSealed: form.sealed, secretNames: form.names, ...(await sealedToOrThrow(tx, await resolveWorkspace(tx, orgId, server.workspaceId), input.sealed_to, liveSince)) }
      : {};
    return updateServer(tx, orgId, server, { ...set, ...sealed }, { by, action: "tool_server.update" });
  });
}

/** Assigns the server to an agent of its workspace (idempotent); the agent check, the insert and the bump are one transaction. */
export async function assignServer(db: Db, orgId: string, server: ServerRow, agentId: string, by: Acting) {
  await db.transaction(async (tx) => {
    const a = tables(tx).toolServerAssignments;
    await getAgentInWorkspace(tx, orgId, agentId, await resolveWorkspace(tx, orgId, server.workspaceId));
    const added = await tx.insert(a).values({ agentId, serverId: server.id, assignedAt: by.at }).onConflictDoNothing().returning({ agentId: a.agentId });
    await bumpRevision(tx, orgId);
    // Assigned already: nothing changed, nothing told.
    if (added.length > 0) await recordServerChange(tx, by, "tool_server.assign", server, { before: { agent_id: agentId, assigned: false }, after: { agent_id: agentId, assigned: true } });
  });
  return { agent_id: agentId, server_id: server.id, assigned: true };
}

/** Takes the server away from an agent; 404 when it was not assigned. */
export async function unassignServer(db: Db, orgId: string, server: ServerRow, agentId: string, by: Acting) {
  await db.transaction(async (tx) => {
    const a = tables(tx).toolServerAssignments;
    await getAgent(tx, orgId, agentId);
    const gone = await tx
      .delete(a)
      .where(and(eq(a.agentId, agentId), eq(a.serverId, server.id)))
      .returning({ agentId: a.agentId });
    if (gone.length === 0) throw new SvcError("not_found", `tool server "${server.name}" is not assigned to agent ${agentId}`);
    await bumpRevision(tx, orgId);
    await recordServerChange(tx, by, "tool_server.unassign", server, { before: { agent_id: agentId, assigned: true }, after: { agent_id: agentId, assigned: false } });
  });
  return { agent_id: agentId, server_id: server.id, assigned: false };
}

/** Deletes a server no agent uses; while assigned it is a 409 naming the agents, so no runtime loses tools by surprise. */
export async function deleteServer(db: Db, orgId: string, server: ServerRow, by: Acting): Promise<void> {
  await db.transaction(async (tx) => {
    const { toolServers: s, toolServerAssignments: a } = tables(tx);
    const agents = (await tx.select({ agentId: a.agentId }).from(a).where(eq(a.serverId, server.id)).orderBy(a.agentId)).map((r) => r.agentId);
    if (agents.length) {
      throw new SvcError("conflict", `tool server "${server.name}" is assigned to ${agents.join(", ")}; unassign it first (svc tool-servers unassign ${server.name} --agent <agent_id>)`, { agents });
    }
    await forgetServerTools(tx, server.id);
    await forgetOauth(tx, server.id);
    const [gone] = await tx
      .delete(s)
      .where(and(eq(s.id, server.id), eq(s.orgId, orgId)))
      .returning();
    if (!gone) throw new SvcError("not_found", `tool server "${server.id}" not found`);
    await bumpRevision(tx, orgId);
    await recordServerChange(tx, by, "tool_server.delete", gone, { before: eventView(gone) });
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
  return (
    await db
      .select()
      .from(s)
      .where(and(eq(s.orgId, orgId), inArray(s.id, ids)))
      .orderBy(s.name)
  ).map(presentServer);
}
