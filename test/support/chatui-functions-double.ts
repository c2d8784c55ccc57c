// A small stand-in for Open WebUI's functions admin API (backend/open_webui/routers/functions.py):
// GET /api/v1/functions/ returns FunctionResponse objects for a bearer token it accepts. It
// records every request so a test can prove a read-only command changed nothing.
export type DoubleFunction = { id: string; type: "pipe" | "filter" | "action"; is_active: boolean; is_global: boolean; name?: string };

export type ChatuiFunctionsDouble = {
  url: string;
  functions: DoubleFunction[];
  /** GET /api/v1/configs/tool_servers's TOOL_SERVER_CONNECTIONS; null answers 404 (an older front end). */
  toolServers: Record<string, unknown>[] | null;
  requests: { method: string; path: string; authorization: string | null }[];
  stop(): void;
};

export function startChatuiFunctionsDouble(opts: { token: string; functions?: DoubleFunction[] }): ChatuiFunctionsDouble {
  const state: ChatuiFunctionsDouble = { url: "", functions: opts.functions ?? [], toolServers: [], requests: [], stop: async () => server.stop(true) };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const url = new URL(req.url);
      const authorization = req.headers.get("authorization");
      state.requests.push({ method: req.method, path: url.pathname, authorization });
      if (authorization !== `Bearer ${opts.token}`) return Response.json({ detail: "Not authenticated" }, { status: 401 });
      if (req.method === "GET" && (url.pathname === "/api/v1/functions/" || url.pathname === "/api/v1/functions")) {
        const now = Math.floor(Date.now() / 1000);
        return Response.json(
          state.functions.map((f) => ({
            id: f.id,
            user_id: "admin-uuid",
            type: f.type,
            name: f.name ?? f.id,
            meta: { description: "", manifest: {} },
            is_active: f.is_active,
            is_global: f.is_global,
            updated_at: now,
            created_at: now,
          })),
        );
      }
      if (req.method === "GET" && url.pathname === "/api/v1/configs/tool_servers" && state.toolServers) return Response.json({ TOOL_SERVER_CONNECTIONS: state.toolServers });
      return Response.json({ detail: "Not Found" }, { status: 404 });
    },
  });
  state.url = `http://127.0.0.1:${server.port}`;
  return state;
}
