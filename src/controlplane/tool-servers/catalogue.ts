// The MCP tools an agent's runtimes serve (issue 31). Each installation's replicas report
// what a server listed (PUT /api/v1/runtime/mcp-tools) and the row of that installation and
// server is replaced; a listing that failed (a crash, an outage) is not reported and changes
// nothing, so a tool stays registered while its server is down and calls to it end as
// "unreachable" (an error outcome) rather than "not registered" (a deny). MCP tools belong to
// the agent: every installation's bundle carries the union of what the agent's installations
// listed, so two installations of one agent never conflict over a name. The server's current
// allow-list and access overrides are applied here, when a bundle is made, so an admin's
// change reaches the bundle at once.
import { and, eq, inArray } from "drizzle-orm";
import type { BundleTool, BundleToolServer } from "../../contract/bundle.ts";
import type { McpSkippedTool, McpToolsReport, McpToolsResult } from "../../contract/runtime-api.ts";
import { type Db, tables } from "../db/index.ts";
import { installationNames, liveInstallationIds } from "../installations/lookup.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";
import { bumpRevision } from "../organizations/service.ts";
import { packToolHolders } from "../tools/lookup.ts";

type Listed = { name: string; upstream: string; access: "read" | "write" };
type Rules = Pick<BundleToolServer, "allowed_tools" | "access_overrides">;

/** The access a tool is served with: the admin's override, else what its annotations said. Prototype-safe: a tool named `toString` is a name, not a method. */
export function effectiveAccess(rules: Pick<Rules, "access_overrides">, t: Pick<Listed, "upstream" | "access">): "read" | "write" {
  return Object.hasOwn(rules.access_overrides, t.upstream) ? rules.access_overrides[t.upstream]! : t.access;
}

/** Whether the allow-list lets the server's tool be served. */
export function allowed(rules: Pick<Rules, "allowed_tools">, upstream: string): boolean {
  return rules.allowed_tools === null || rules.allowed_tools.includes(upstream);
}

const sortedJson = (xs: readonly { [k: string]: unknown }[], key: string) => JSON.stringify([...xs].sort((a, b) => (String(a[key]) < String(b[key]) ? -1 : 1)));

/**
 * Stores one replica's report for its installation. Servers not assigned to the agent are
 * ignored (named in the answer: a report raced an unassignment). The revision is bumped when
 * the tools of a server changed for this installation (what its skipped tools say alone does
 * not change a bundle).
 */
export async function reportListedTools(db: Db, caller: RuntimeCaller, report: McpToolsReport, now: number): Promise<McpToolsResult> {
  return db.transaction(async (tx) => {
    const { toolServers: s, toolServerAssignments: a, toolServerTools: c } = tables(tx);
    const names = report.servers.map((r) => r.server);
    const assigned = names.length
      ? await tx
          .select({ id: s.id, name: s.name })
          .from(a)
          .innerJoin(s, eq(s.id, a.serverId))
          .where(and(eq(a.agentId, caller.agentId), inArray(s.name, names)))
      : [];
    const idOf = new Map(assigned.map((r) => [r.name, r.id]));
    let changed = false;
    const unknown: string[] = [];
    for (const r of report.servers) {
      const serverId = idOf.get(r.server);
      if (!serverId) {
        unknown.push(r.server);
        continue;
      }
      const [held] = await tx
        .select()
        .from(c)
        .where(and(eq(c.serverId, serverId), eq(c.installationId, caller.installationId)));
      const tools = [...r.tools].sort((x, y) => (x.name < y.name ? -1 : 1));
      const skipped = [...r.skipped].sort((x, y) => (x.tool < y.tool ? -1 : 1));
      const toolsChanged = !held || sortedJson(held.tools, "name") !== JSON.stringify(tools);
      if (held && !toolsChanged && sortedJson(held.skipped, "tool") === JSON.stringify(skipped)) continue;
      if (held)
        await tx
          .update(c)
          .set({ tools, skipped, listedAt: now })
          .where(and(eq(c.serverId, serverId), eq(c.installationId, caller.installationId)));
      else await tx.insert(c).values({ serverId, installationId: caller.installationId, tools, skipped, listedAt: now });
      changed ||= toolsChanged;
    }
    if (changed) await bumpRevision(tx, caller.orgId);
    return { changed, unknown_servers: unknown };
  });
}

type Row = { serverId: string; installationId: string; tools: Listed[]; skipped: McpSkippedTool[] };

/** The catalogue rows of installations not deleted, for these servers; with `agent`, only of that agent's installations. */
async function rowsOf(db: Db, serverIds: readonly string[], agent: { workspaceId: string; agentId: string } | null): Promise<Row[]> {
  if (serverIds.length === 0) return [];
  const c = tables(db).toolServerTools;
  const rows = await db
    .select({ serverId: c.serverId, installationId: c.installationId, tools: c.tools, skipped: c.skipped })
    .from(c)
    .where(inArray(c.serverId, [...serverIds]))
    .orderBy(c.serverId, c.installationId);
  if (agent) {
    const live = new Set(await liveInstallationIds(db, agent.workspaceId, agent.agentId));
    return rows.filter((r) => live.has(r.installationId));
  }
  const names = await installationNames(
    db,
    rows.map((r) => r.installationId),
  );
  return rows.filter((r) => names.get(r.installationId)?.deleted === false);
}

/**
 * The MCP tools of an agent's bundle: for each assigned server, the union of what the agent's
 * installations listed, within the allow-list, with the overrides applied. Where two listings
 * disagree on a tool's access, `write` wins (the stricter reading of the annotations).
 */
export async function mcpToolsForAgent(db: Db, agent: { workspaceId: string; agentId: string }, servers: readonly BundleToolServer[]): Promise<BundleTool[]> {
  const byId = new Map(servers.map((s) => [s.id, s]));
  const out = new Map<string, BundleTool>();
  for (const row of await rowsOf(db, [...byId.keys()], agent)) {
    const server = byId.get(row.serverId)!;
    for (const t of row.tools) {
      if (!t.name.startsWith(`${server.name}.`) || !allowed(server, t.upstream)) continue;
      const access = effectiveAccess(server, t);
      const held = out.get(t.name);
      if (held && held.access === "write") continue;
      out.set(t.name, { name: t.name, access, required_capabilities: [], server: server.name, upstream: t.upstream });
    }
  }
  return [...out.values()];
}

/** What `svc tool-servers show` lists: each tool the runtimes listed, served or not, with the installations that listed it. */
export type CatalogueEntry = { name: string; upstream: string; access: "read" | "write"; served: boolean; why: string | null; installations: string[] };

export async function serverCatalogue(db: Db, server: { id: string; name: string; workspaceId: string } & Rules): Promise<CatalogueEntry[]> {
  const out = new Map<string, CatalogueEntry>();
  const seen = (key: string, fresh: () => CatalogueEntry, installationId: string) => {
    const e = out.get(key) ?? fresh();
    if (!e.installations.includes(installationId)) e.installations.push(installationId);
    out.set(key, e);
  };
  for (const row of await rowsOf(db, [server.id], null)) {
    for (const t of row.tools) {
      const served = allowed(server, t.upstream);
      seen(
        `t:${t.name}`,
        () => ({ name: t.name, upstream: t.upstream, access: effectiveAccess(server, t), served, why: served ? null : "not in allowed_tools", installations: [] }),
        row.installationId,
      );
    }
    for (const k of row.skipped) seen(`s:${k.tool}`, () => ({ name: "", upstream: k.tool, access: "write", served: false, why: k.why, installations: [] }), row.installationId);
  }
  const entries = [...out.values()];
  for (const [name, installationId] of await packToolHolders(
    db,
    server.workspaceId,
    entries.filter((e) => e.served).map((e) => e.name),
  )) {
    const e = entries.find((x) => x.served && x.name === name)!;
    Object.assign(e, { served: false, why: packWins(installationId) });
  }
  return entries.sort((a, b) => (a.upstream < b.upstream ? -1 : a.upstream > b.upstream ? 1 : 0));
}

/** Why an MCP tool is not served where a pack registered its governed name (the pack's tool wins in that installation's bundle). */
const packWins = (installationId: string) =>
  `a pack's tool of the same name, registered by installation ${installationId}, is served there instead; give the server another name or rename the pack's tool`;

/**
 * What readiness names as not served, per installation: the tools the runtimes skipped, and the
 * listed tools whose governed name a pack holds (a collision).
 */
export async function skippedTools(db: Db, server: { id: string; workspaceId: string }): Promise<Array<McpSkippedTool & { installation_id: string }>> {
  const rows = await rowsOf(db, [server.id], null);
  const skipped = rows.flatMap((r) => r.skipped.map((k) => ({ ...k, installation_id: r.installationId })));
  const byName = new Map(rows.flatMap((r) => r.tools.map((t) => [t.name, t.upstream] as const)));
  for (const [name, installationId] of await packToolHolders(db, server.workspaceId, [...byName.keys()])) {
    skipped.push({ tool: byName.get(name)!, why: packWins(installationId), installation_id: installationId });
  }
  return skipped;
}

/** Forgets what was listed from a server (it is being deleted). */
export async function forgetServerTools(tx: Db, serverId: string): Promise<void> {
  const c = tables(tx).toolServerTools;
  await tx.delete(c).where(eq(c.serverId, serverId));
}

/** The agent's MCP tool names a set of names holds (policies naming them are not "unregistered"). */
export async function listedToolNames(db: Db, workspaceId: string, names: readonly string[]): Promise<Set<string>> {
  if (names.length === 0) return new Set();
  const { toolServerTools: c, toolServers: s } = tables(db);
  const rows = await db.select({ tools: c.tools }).from(c).innerJoin(s, eq(s.id, c.serverId)).where(eq(s.workspaceId, workspaceId));
  const wanted = new Set(names);
  const out = new Set<string>();
  for (const r of rows) for (const t of r.tools) if (wanted.has(t.name)) out.add(t.name);
  return out;
}
