// What `svc harness sync` compares: the front end's functions against what svc needs there — the
// Pipe `svc` (the only model provider) installed and active, and the filter `svc_guard`
// installed, active and global (a guard that is not global does not run for every model).
// Pure: the command fetches the list, this decides the drift.

export const PIPE_ID = "svc";
export const GUARD_ID = "svc_guard";

/** The fields of Open WebUI's FunctionResponse that matter here (routers/functions.py GET /). */
export type FrontEndFunction = { id: string; type: string; is_active: boolean; is_global: boolean; name?: string };

export type DriftProblem = "missing" | "wrong_type" | "inactive" | "not_global" | "unserved_tool_server" | "changed";
export type Drift = { function: string; problem: DriftProblem; message: string };

export function harnessDrift(functions: readonly FrontEndFunction[]): Drift[] {
  const drifts: Drift[] = [];
  const byId = new Map(functions.map((f) => [f.id, f]));
  const pipe = byId.get(PIPE_ID);
  if (!pipe) drifts.push({ function: PIPE_ID, problem: "missing", message: `Pipe ${PIPE_ID} is not installed` });
  else if (pipe.type !== "pipe") drifts.push({ function: PIPE_ID, problem: "wrong_type", message: `function ${PIPE_ID} is a ${pipe.type}, not a pipe` });
  else if (!pipe.is_active) drifts.push({ function: PIPE_ID, problem: "inactive", message: `Pipe ${PIPE_ID} is installed but inactive` });

  const guard = byId.get(GUARD_ID);
  if (!guard) drifts.push({ function: GUARD_ID, problem: "missing", message: `filter ${GUARD_ID} is not installed` });
  else if (guard.type !== "filter") drifts.push({ function: GUARD_ID, problem: "wrong_type", message: `function ${GUARD_ID} is a ${guard.type}, not a filter` });
  else {
    if (!guard.is_active) drifts.push({ function: GUARD_ID, problem: "inactive", message: `filter ${GUARD_ID} is installed but inactive` });
    if (!guard.is_global) drifts.push({ function: GUARD_ID, problem: "not_global", message: `filter ${GUARD_ID} is not global, so it does not guard every model` });
  }
  return drifts;
}

/** Accepts the list Open WebUI returns; null when the body is not a list of functions. */
export function parseFunctionList(body: unknown): FrontEndFunction[] | null {
  if (!Array.isArray(body)) return null;
  const out: FrontEndFunction[] = [];
  for (const f of body) {
    if (!f || typeof f !== "object" || typeof (f as { id?: unknown }).id !== "string") return null;
    const r = f as Record<string, unknown>;
    out.push({ id: r.id as string, type: String(r.type ?? ""), is_active: r.is_active === true, is_global: r.is_global === true, ...(typeof r.name === "string" ? { name: r.name } : {}) });
  }
  return out;
}

/** svc's MCP gateway in Open WebUI's tool-server connections (src/supervisor/frontend.ts MCP_CONNECTION_ID). */
export const MCP_CONNECTION_ID = "svc";

/** A tool-server connection as GET /api/v1/configs/tool_servers lists it (the fields used here). */
export type ToolServerConnection = { type?: string; url?: string; auth_type?: string; info?: { id?: string; name?: string } };

/**
 * Tool servers (issue 13): svc's own MCP connection is the only one served. Any other — an MCP
 * or OpenAPI server an admin added by hand — is never served (the guard strips its tool ids) and
 * is drift; so is svc's connection changed away from type mcp with auth_type session. A missing
 * svc connection is not drift here: a runtime without the MCP gateway seeds none.
 */
export function toolServerDrift(connections: readonly ToolServerConnection[]): Drift[] {
  const drifts: Drift[] = [];
  for (const c of connections) {
    const id = c.info?.id ?? "";
    if (id === MCP_CONNECTION_ID) {
      if (c.type !== "mcp" || c.auth_type !== "session")
        drifts.push({
          function: `tool server ${id}`,
          problem: "changed",
          message: `tool server "${id}" is svc's MCP gateway but is now type ${c.type ?? "?"} with auth ${c.auth_type ?? "?"} (svc seeds type mcp, auth session)`,
        });
      continue;
    }
    drifts.push({
      function: `tool server ${id || "(no id)"}`,
      problem: "unserved_tool_server",
      message: `tool server "${id || c.url || "?"}" (${c.type ?? "openapi"}${c.url ? ` ${c.url}` : ""}) was added by hand; svc never serves it: remove it in Admin Panel > Settings > External Tools`,
    });
  }
  return drifts;
}

/** The connections of GET /api/v1/configs/tool_servers; null when the body is not that. */
export function parseToolServers(body: unknown): ToolServerConnection[] | null {
  const list = (body as { TOOL_SERVER_CONNECTIONS?: unknown } | null)?.TOOL_SERVER_CONNECTIONS;
  if (!Array.isArray(list)) return null;
  return list.filter((c): c is ToolServerConnection => !!c && typeof c === "object");
}
