// The MCP gateway: the one MCP endpoint (Streamable HTTP, POST/GET/DELETE /mcp) that Open
// WebUI's tool-server connection reaches on loopback TCP inside the container.
//
// Identity: every request carries the user's Open WebUI session JWT (auth_type "session"),
// verified with the front end's secret (session-jwt.ts); none is refused with 401. A session
// (Mcp-Session-Id) belongs to the user who opened it: another user's token on it is a 403.
//
// The gateway serves and decides MCP tools only (`<server>.<tool>` of a server assigned to the
// agent): another name, a pack tool's included, is an unknown tool here, neither decided nor
// audited. tools/list offers the agent's MCP tools this replica reaches now that some policy
// could permit to the user (a conditional permit lists a tool, a conditional deny does not
// hide it: the call is decided with its arguments, issue 31). tools/call is an adapter over the governed-call pipeline
// (../pipeline/pipeline.ts), decided again on every call with the same steps as a pack tool
// (rate limits included), the audit record durable before anything else happens:
//   permit   → the decision record, then the upstream call, then an outcome record (ok/error)
//   deny     → an MCP error result `Refused (svc.denied): …` (or the limit's refusal); the
//              upstream is never contacted
//   unlinked → `Refused (identity.unlinked)`; the claim link goes to that user alone as a URL
//              elicitation, which Open WebUI routes to the user's own browser session
//              (MCPClient.elicit → __event_call__ → `request:elicitation`), never into the
//              tool result or the model's context
// Upstream faults (unreachable, timeout, crash, oversized result, cancellation) end as an
// error result and an outcome record "error": none loses the audit record. A server this
// replica cannot reach is tried again at once when a call needs it. During a call, the
// server's progress notifications reach the caller, the caller's cancellation reaches the
// server, and an elicitation of the server reaches the calling user's own session alone. A decision whose
// record cannot be written (the spool's disk is full: `spool_full`) is refused as an MCP error
// result naming the code, and nothing runs.
import { randomUUID } from "node:crypto";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import {
  type CallToolResult,
  CallToolRequestSchema,
  type ElicitRequest,
  ElicitResultSchema,
  ListToolsRequestSchema,
  type ServerNotification,
  type ServerRequest,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { Context } from "@opentelemetry/api";
import { REFUSAL_CODES } from "../../contract/errors.ts";
import type { Logger } from "../../log/index.ts";
import { VERSION } from "../../version.ts";
import { discardUnread } from "../api/json-body.ts";
import { UnrecordableCall } from "../audit/recorder.ts";
import { SpoolFullError } from "../audit/spool-space.ts";
import type { Admission, Pipeline } from "../pipeline/pipeline.ts";
import { type CompiledBundle, couldPermitTool } from "../policy/policy-index.ts";
import { NO_TRACING, type Tracing } from "../../tracing/index.ts";
import { mcpCallParent, traceMcpCall, traceUpstreamCall } from "./call-trace.ts";
import { MCP_REQUEST_LIMIT_BYTES, readMcpRequest } from "./request-body.ts";
import type { ProxyStatus } from "../policy/status.ts";
import type { McpServers } from "./servers.ts";
import { type IdentifiedCall, callIdentity } from "./upstream-identity.ts";
import type { SessionChecks } from "./session-check.ts";
import { verifySession } from "./session-jwt.ts";
import { consentMessage, userUpstream } from "./gateway-oauth.ts";
import type { OauthUpstreams } from "./oauth.ts";
import type { UpstreamIdentity } from "../../contract/audit.ts";

export const MCP_GATEWAY_PATH = "/mcp";
/** Sessions kept at most (the oldest is closed first); Open WebUI opens one per chat turn. */
export const MAX_SESSIONS = 1000;
export const SESSION_IDLE_MS = 30 * 60_000;
/** How long a refused call waits for the user to see the claim link (Open WebUI waits ≥ 60 s for the browser). */
export const CLAIM_ELICIT_WAIT_MS = 60_000;
/** How long a refused call waits for the control plane to create the claim link (a chat turn waits 1 s). */
export const CLAIM_LINK_WAIT_MS = 10_000;
/** How long a call waits for a server this replica could not reach to answer again. */
export const REACH_WAIT_MS = 5_000;

export type GatewayDeps = {
  status: ProxyStatus;
  /** The governed-call pipeline, shared with the local API's routes. */
  pipeline: Pipeline;
  servers: Pick<McpServers, "entries" | "find" | "reach">;
  /** CHATUI_SECRET_KEY: Open WebUI signs its session JWTs with it. */
  secretKey: string;
  /** The users' own connections to OAuth servers (issue 32); absent: such a server's calls are refused. */
  oauth?: Pick<OauthUpstreams, "forUser" | "drop"> | null;
  /** Asks Open WebUI whether a session is still valid (SVC_PROXY_CHATUI_URL); null: signature and claims alone. */
  sessions?: Pick<SessionChecks, "check"> | null;
  log: Logger;
  /** Spans of each call and its upstream call (call-trace.ts); off when absent. */
  tracing?: Tracing;
  elicitWaitMs?: number;
  now?: () => number;
};

type Session = { transport: WebStandardStreamableHTTPServerTransport; server: Server; userId: string; lastSeen: number };
type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

function rpcError(status: number, message: string, headers: Record<string, string> = {}, id: string | number | null = null, code = -32001): Response {
  return Response.json({ jsonrpc: "2.0", error: { code, message }, id }, { status, headers });
}

const refusal = (text: string): CallToolResult => ({ content: [{ type: "text", text }], isError: true });
const CLAIM_MESSAGE = "Your chat account is not linked to a service account yet, so svc refused this tool. Open the link to link it; then ask again.";

/**
 * The server a name belongs to when it is an MCP tool's: `<server>.<tool>` of a server assigned
 * to the agent (registered or not, served now or not); null otherwise. Only these are decided
 * here; a pack tool's name is not, whatever it permits.
 */
export function mcpServerOf(c: CompiledBundle, name: string): string | null {
  const dot = name.indexOf(".");
  if (dot <= 0) return null;
  const server = name.slice(0, dot);
  return (c.bundle.tool_servers ?? []).some((s) => s.name === server) ? server : null;
}

/**
 * The decision's audit record could not be written, so the call is refused and not run (fail
 * closed). An MCP error result, not a JSON-RPC internal error: the model and the user read why,
 * and `_meta["svc/error"]` carries the code (`spool_full`, `unrecordable_call`) for programs.
 */
function unrecordedResult(code: string, text: string, extra: Record<string, unknown> = {}): CallToolResult {
  return { content: [{ type: "text", text }], isError: true, _meta: { "svc/error": { code, ...extra } } };
}

export type Gateway = { fetch(req: Request): Promise<Response>; sessions(): number; close(): Promise<void> };

export function createMcpGateway(d: GatewayDeps): Gateway {
  const sessions = new Map<string, Session>();
  const now = d.now ?? Date.now;
  const tracing = d.tracing ?? NO_TRACING;

  function offered(userId: string): Tool[] {
    const compiled = d.pipeline.bundle();
    if (!compiled) return [];
    return d.servers
      .entries()
      .filter((e) => compiled.tools.get(e.name)?.server === e.server && couldPermitTool(compiled, { id: userId }, e.name))
      .map((e) => ({ ...e.tool, name: e.name }));
  }

  async function deliverClaim(
    server: Server,
    url: string,
    send: (r: { method: "elicitation/create"; params: Record<string, unknown> }) => Promise<unknown>,
    userId: string,
    what = "claim link",
    message = CLAIM_MESSAGE,
  ): Promise<void> {
    if (!server.getClientCapabilities()?.elicitation) {
      d.log.warn(`${what} not delivered: the MCP client takes no elicitations`, { remote_user_id: userId });
      return;
    }
    try {
      await send({ method: "elicitation/create", params: { mode: "url", elicitationId: randomUUID(), url, message } });
    } catch (e) {
      d.log.info(`${what} elicitation ended without an answer`, { remote_user_id: userId, error: (e as Error).message.slice(0, 200) });
    }
  }

  function unrecorded(e: unknown, name: string): CallToolResult {
    if (e instanceof SpoolFullError) {
      d.log.error("mcp call refused: audit spool full", { action: `tool:${name}`, code: e.code, spool: e.path, free_bytes: e.freeBytes });
      return unrecordedResult(
        e.code,
        `Refused (governance.unavailable): spool_full: svc's audit spool is full, so no call can be decided until the control plane takes the backlog or space is freed; the tool ${name} was not run`,
        { free_bytes: e.freeBytes },
      );
    }
    if (e instanceof UnrecordableCall) return unrecordedResult(e.code, `Refused (${e.code}): ${e.problem}; the tool ${name} was not run`);
    d.log.error("mcp call refused: the audit record could not be written", { action: `tool:${name}`, error: (e as Error).message.slice(0, 300) });
    return unrecordedResult("internal", `Refused (governance.unavailable): the audit record could not be written; the tool ${name} was not run`);
  }

  /**
   * What a call's upstream may send back during it: progress, and elicitations for this user
   * alone. `flushed` resolves once the progress notifications are sent, so the last one never
   * arrives after the result.
   */
  function callContext(server: Server, userId: string, progressToken: string | number | undefined, extra: Extra) {
    const takesElicitation = Boolean(server.getClientCapabilities()?.elicitation);
    let sent: Promise<void> = Promise.resolve();
    return {
      userId,
      signal: extra.signal,
      flushed: async () => sent,
      ...(progressToken === undefined
        ? {}
        : {
            onProgress: (p: { progress: number; total?: number; message?: string }) => {
              sent = sent.then(async () => extra.sendNotification({ method: "notifications/progress", params: { ...p, progressToken } })).catch(() => {});
            },
          }),
      ...(takesElicitation
        ? {
            elicit: async (params: ElicitRequest["params"], signal: AbortSignal) =>
              extra.sendRequest({ method: "elicitation/create", params }, ElicitResultSchema, { signal, timeout: d.elicitWaitMs ?? CLAIM_ELICIT_WAIT_MS }),
          }
        : {}),
    };
  }

  async function call(
    server: Server,
    userId: string,
    name: string,
    args: Record<string, unknown>,
    progressToken: string | number | undefined,
    extra: Extra,
    trace: Context,
    compiled: CompiledBundle | null,
    serverName: string | null,
  ): Promise<CallToolResult> {
    if (!compiled) return refusal(`governance unavailable: ${d.status.readiness().reason ?? d.status.state}; the tool was not run`);
    if (serverName === null) {
      d.log.warn("mcp call refused: not an MCP tool of this agent", { tool: name.slice(0, 200) });
      return refusal(`unknown tool "${name.slice(0, 200)}": the svc MCP gateway serves only the tools of the MCP servers assigned to this agent; the tool was not run`);
    }
    let a: Admission;
    try {
      // The elicitation holds the call for the user anyway: wait longer for the link than a chat turn does.
      a = await d.pipeline.admit(compiled, { kind: "tool", tool: name, args, payload: null, server: serverName, user: { id: userId }, claimWaitMs: CLAIM_LINK_WAIT_MS }, trace);
    } catch (e) {
      return unrecorded(e, name);
    }
    if (!a.permit) {
      if (a.refusal.code === REFUSAL_CODES.unlinked && !a.claim) d.log.warn("claim link not delivered: none was created in time", { remote_user_id: userId });
      if (a.claim) {
        const send = async (r: { method: "elicitation/create"; params: Record<string, unknown> }) =>
          (extra.sendRequest as unknown as (r: unknown, s: unknown, o: unknown) => Promise<unknown>)(r, ElicitResultSchema, { timeout: d.elicitWaitMs ?? CLAIM_ELICIT_WAIT_MS });
        await deliverClaim(server, a.claim, send, userId);
      }
      // The spec's bare code, and for an MCP client which tool and server it was about.
      if (a.refusal.code === REFUSAL_CODES.toolNotRegistered)
        return refusal(
          `${a.refusal.message}: the MCP server "${serverName}" has no tool "${name.slice(serverName.length + 1, 200)}" registered for this agent (svc tool-servers show ${serverName} lists them); the tool was not run`,
        );
      return refusal(a.refusal.message);
    }
    const record = a.record;
    const finish = async (outcome: "ok" | "error", why?: string, presented: UpstreamIdentity | null = null) => {
      try {
        const o = await d.pipeline.toolOutcome(compiled, record.id, outcome, null, presented);
        d.log.info("outcome", { via: "mcp", record_id: o?.id ?? null, ref: record.id, outcome, ...(why ? { error: why } : {}) });
      } catch (e) {
        // The decision record is durable and the call has run (or failed): its answer stands, as
        // for a pack tool whose outcome the proxy could not take.
        d.log.error("outcome record not written", { via: "mcp", ref: record.id, outcome, code: (e as { code?: string }).code ?? "internal", error: (e as Error).message.slice(0, 300) });
      }
    };
    // Registered for the agent, but this replica does not reach its server now: try it again at once.
    const served = d.servers.find(name) ?? (await d.servers.reach(serverName, name, REACH_WAIT_MS));
    if ("error" in served) {
      await finish("error", "unreachable");
      return refusal(`MCP server "${serverName}" is unreachable from this runtime (${served.error}); the tool ${name} was not run`);
    }
    // An OAuth server (issue 32): the call goes over this user's own connection, with their token.
    const own = await userUpstream(d.oauth, served.upstream, userId);
    if (!own.ok) {
      if (own.consent) {
        const send = async (r: { method: "elicitation/create"; params: Record<string, unknown> }) =>
          (extra.sendRequest as unknown as (r: unknown, s: unknown, o: unknown) => Promise<unknown>)(r, ElicitResultSchema, { timeout: d.elicitWaitMs ?? CLAIM_ELICIT_WAIT_MS });
        await deliverClaim(server, own.consent, send, userId, "consent link", consentMessage(serverName));
      }
      await finish("error", own.code);
      return refusal(own.text);
    }
    const ctx: ReturnType<typeof callContext> & IdentifiedCall = Object.assign(callContext(server, userId, progressToken, extra), {
      identity: served.upstream.asksIdentity ? callIdentity(compiled, record, served.entry.upstream) : undefined,
    });
    try {
      const result = await traceUpstreamCall(tracing, trace, serverName, served.entry.upstream, async (t) =>
        own.upstream.call(served.entry.upstream, args, t ? Object.assign(ctx, { trace: t }) : ctx),
      );
      // The outcome record is handed to the spool now (its place in the chain taken) and made
      // durable by the spool's next group commit; the answer does not wait for its fdatasync,
      // as a model call's answer does not wait for its outcome. The decision record, the
      // guarantee, was durable before the upstream saw the call.
      void finish(result.isError ? "error" : "ok", undefined, own.identity ?? ctx.presented ?? null);
      await ctx.flushed();
      return result;
    } catch (e) {
      const code = (e as { code?: string }).code ?? "upstream_error";
      await own.failed?.(e);
      await finish("error", code, own.identity ?? ctx.presented ?? null);
      return refusal((e as Error).message);
    }
  }

  function newServer(userId: string): Server {
    const server = new Server({ name: "svc", version: VERSION }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: offered(userId) }));
    server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
      const { name, arguments: args, _meta: meta } = req.params;
      const parent = mcpCallParent(tracing, meta, extra.requestInfo?.headers);
      const compiled = d.pipeline.bundle();
      const serverName = compiled ? mcpServerOf(compiled, name) : null;
      // One bundle and one server lookup for the call and its span.
      return traceMcpCall(tracing, parent, name, serverName, async (trace) =>
        call(server, userId, name, (args ?? {}) as Record<string, unknown>, meta?.progressToken, extra, trace, compiled, serverName),
      );
    });
    return server;
  }

  async function closeSession(id: string): Promise<void> {
    const s = sessions.get(id);
    if (!s) return;
    sessions.delete(id);
    await s.server.close().catch(() => {});
  }

  function sweep(): void {
    const cutoff = now() - SESSION_IDLE_MS;
    for (const [id, s] of sessions) if (s.lastSeen < cutoff) void closeSession(id);
    while (sessions.size >= MAX_SESSIONS) void closeSession(sessions.keys().next().value!);
  }

  return {
    sessions: () => sessions.size,
    async fetch(req) {
      const res = await answer(req);
      // Read before answering: a 401 or 404 given without reading the body waits for it (bounded).
      await discardUnread(req, MCP_REQUEST_LIMIT_BYTES);
      return res;
    },
    async close() {
      await Promise.all([...sessions.keys()].map(closeSession));
    },
  };

  async function answer(req: Request): Promise<Response> {
    if (new URL(req.url).pathname !== MCP_GATEWAY_PATH) return rpcError(404, `no MCP endpoint here; it is ${MCP_GATEWAY_PATH}`);
    const who = verifySession(req.headers.get("authorization"), d.secretKey, Math.floor(now() / 1000));
    if (!who.ok) {
      d.log.warn("mcp request refused", { reason: who.reason });
      const why = who.reason === "api_key" ? "Open WebUI API keys are not accepted by the svc MCP gateway; use a signed-in session" : `a valid Open WebUI session is required (${who.reason})`;
      return rpcError(401, why, { "www-authenticate": 'Bearer realm="svc-mcp"' });
    }
    const valid = d.sessions ? await d.sessions.check(who.token) : { ok: true as const };
    if (!valid.ok) {
      d.log.warn("mcp request refused", { reason: valid.status === 401 ? "session_revoked" : "session_unchecked", remote_user_id: who.userId });
      return rpcError(valid.status, `a valid Open WebUI session is required: ${valid.why}`, valid.status === 401 ? { "www-authenticate": 'Bearer realm="svc-mcp"' } : {});
    }
    // The body parsed here, exactly (contract/exact-json.ts), not by the SDK's JSON.parse: a
    // number a double does not hold reaches the condition, the audit and the upstream tool
    // as the caller wrote it.
    const body = req.method === "POST" ? await readMcpRequest(req) : null;
    if (body && !body.ok) {
      d.log.warn("mcp request refused", { reason: body.code });
      // An oversized request is that request's error (-32600 Invalid Request), with HTTP 200: the session goes on.
      return body.code === "request_too_large" ? rpcError(200, body.message, {}, body.id, -32600) : rpcError(body.status, body.message);
    }
    const opts = body ? { parsedBody: body.value } : undefined;
    const sid = req.headers.get("mcp-session-id");
    if (sid) {
      const s = sessions.get(sid);
      if (!s) return rpcError(404, "unknown or expired MCP session; initialize again");
      if (s.userId !== who.userId) return rpcError(403, "this MCP session belongs to another user");
      s.lastSeen = now();
      return s.transport.handleRequest(req, opts);
    }
    sweep();
    const server = newServer(who.userId);
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, { transport, server, userId: who.userId, lastSeen: now() }),
      onsessionclosed: (id) => void sessions.delete(id),
    });
    await server.connect(transport);
    const res = await transport.handleRequest(req, opts);
    if (!transport.sessionId) await server.close().catch(() => {}); // not an initialize: nothing to keep
    return res;
  }
}
