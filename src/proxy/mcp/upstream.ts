// One upstream MCP server, as the gateway reaches it with the official TypeScript SDK:
// Streamable HTTP (https; the server's secrets sent as request headers) or stdio (the command
// installed in the image; its secrets in the child's environment). A stdio server that dies
// is started again with a doubling backoff (STDIO_RESTART_MS up to STDIO_RESTART_MAX_MS); an
// HTTP one is tried again on the next bundle poll; either is tried again at once when a call
// asks for it (`retryNow`, at most once a second). A stdio server that hangs without exiting
// is found by the MCP `ping` request, sent every STDIO_PING_INTERVAL_MS whether calls are in
// flight or not (the spec has receivers answer a ping promptly, whatever else they do): no
// answer within STDIO_PING_TIMEOUT_MS and the process is killed and handled as one that died
// (unreachable at once, restarted with the same backoff). Calls carry a timeout, pass
// cancellation on (the SDK sends notifications/cancelled), pass the server's progress
// notifications back to the caller, hand the server's elicitation requests to the calling user
// (never to another user: with calls of several users in flight on the server, which one it
// belongs to is unknown over MCP, so it is declined), and a result larger than
// MCP_RESULT_LIMIT_BYTES is refused by that name. svc declares no sampling capability, so a
// server never asks it for a model call (docs/mcp.md "What MCP svc serves"). Secrets and
// arguments never reach the log.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import {
  type CallToolResult,
  type ElicitRequest,
  ElicitRequestSchema,
  ProgressNotificationSchema,
  ToolListChangedNotificationSchema,
  type ElicitResult,
  ErrorCode,
  McpError,
  type Progress,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import type { BundleToolServer } from "../../contract/bundle.ts";
import type { Logger } from "../../log/index.ts";
import { VERSION } from "../../version.ts";
import { withOutgoingTrace, withTraceHeaders } from "./call-trace.ts";
import { ExecaStdioTransport } from "./stdio-transport.ts";
import { type AssertionSource, type IdentifiedCall, callScope, presentIdentity } from "./upstream-identity.ts";

/** Largest tool result passed back to the front end (the JSON of the MCP result). */
export const MCP_RESULT_LIMIT_BYTES = 4 * 1024 * 1024;
export const CONNECT_TIMEOUT_MS = 15_000;
export const CALL_TIMEOUT_MS = 120_000;
export const STDIO_RESTART_MS = 1_000;
export const STDIO_RESTART_MAX_MS = 30_000;
/** How often an idle stdio server is pinged, and how long its answer may take. */
export const STDIO_PING_INTERVAL_MS = 30_000;
export const STDIO_PING_TIMEOUT_MS = 10_000;

export type UpstreamState = "connecting" | "ok" | "unreachable";
/** How soon after an attempt a call may make the upstream try again (`retryNow`). */
export const RETRY_NOW_MIN_MS = 1_000;

/** One call in flight, as the upstream's requests and notifications during it reach its caller. */
export type CallContext = IdentifiedCall & {
  /** The front-end user the call is for: an elicitation goes to this user alone. */
  userId: string;
  signal?: AbortSignal;
  /** The server's progress on this call (its progress notifications). */
  onProgress?: (p: Progress) => void;
  /** Hands an elicitation of the server to the calling user's own MCP session; absent: the user's client takes none. */
  elicit?: (params: ElicitRequest["params"], signal: AbortSignal) => Promise<ElicitResult>;
  /** W3C trace context (`traceparent`, `tracestate`) passed on in `_meta` and as HTTP headers (call-trace.ts). */
  trace?: Record<string, string>;
};

/**
 * Where an HTTP server's requests may go (issue 31): resolves the URL's host, refuses a
 * non-public address unless allowed, and gives the address to connect to. Asked for every
 * request, so a name that resolves elsewhere later (DNS rebinding) is checked again.
 */
export type OutboundGuard = (url: URL) => Promise<{ url: URL; headers: Record<string, string>; serverName: string | null }>;

/** A call that did not produce an upstream result: the code goes to the log and the outcome. */
/** What decides whether a connection must be made again. */
export function connectionKey(s: BundleToolServer): string {
  return JSON.stringify([s.transport, s.url, s.command, s.args, s.secrets_sealed, s.auth ?? null, s.assertion ?? null]);
}

export class UpstreamError extends Error {
  override name = "UpstreamError";
  constructor(
    readonly code: "unreachable" | "timeout" | "cancelled" | "result_too_large" | "upstream_error",
    message: string,
  ) {
    super(message);
  }
}

export type UpstreamOptions = {
  server: BundleToolServer;
  /** Unsealed secrets: header → value (http) or VAR → value (stdio). */
  secrets: Record<string, string>;
  /** CA certificates for https (system roots + SVC_PROXY_CA_FILE), or null for the defaults. */
  ca: string[] | null;
  log: Logger;
  connectTimeoutMs?: number;
  callTimeoutMs?: number;
  resultLimitBytes?: number;
  pingIntervalMs?: number;
  pingTimeoutMs?: number;
  /** The tool list changed outside a refresh (a restarted stdio server). */
  onChange?: () => void;
  /** Checks and pins each HTTP request's address (absent: none, as in tests of the transport alone). */
  connectGuard?: OutboundGuard;
  /** Headers asked for on every HTTP request (an OAuth server: the user's bearer token, fresh; oauth.ts). */
  authorize?: () => Promise<Record<string, string>>;
  /** The server asks for a signed identity assertion on every request (issue 32, upstream-identity.ts). */
  assertion?: AssertionSource;
};

export class Upstream {
  state: UpstreamState = "connecting";
  error: string | null = null;
  tools: Tool[] = [];
  private client: Client | null = null;
  private closed = false;
  private restartDelay = STDIO_RESTART_MS;
  private restartTimer: ReturnType<typeof setTimeout> | null = null;
  private connecting: Promise<void> | null = null;
  private pingTimer: ReturnType<typeof setInterval> | null = null;
  private pinging = false;
  private readonly calls = new Set<CallContext>();
  /** Progress tokens of the calls in flight (our own: the SDK's own handler drops a notification that arrives just before its result). */
  private readonly progress = new Map<string, CallContext>();
  private nextToken = 0;
  private lastAttempt = 0;

  constructor(readonly o: UpstreamOptions) {}

  get name(): string {
    return this.o.server.name;
  }

  /** Whether each request presents a signed identity assertion (issue 32): only then does a call carry its identity. */
  get asksIdentity(): boolean {
    return this.o.assertion !== undefined;
  }

  private transport(): Transport {
    const s = this.o.server;
    if (s.transport === "http") {
      if (!s.url) throw new Error("no url");
      const ca = this.o.ca;
      const guard = this.o.connectGuard;
      // Bun's fetch takes the CA bundle as `tls.ca`; the SDK takes a fetch of our own. With a
      // guard, each request goes to the address it checked, the certificate still checked
      // against the URL's host name.
      const authorize = this.o.authorize;
      const assertion = this.o.assertion;
      const tlsFetch = (async (url: string | URL, given?: RequestInit) => {
        const init = withTraceHeaders(given);
        const headers = new Headers(init?.headers);
        if (authorize) for (const [k, v] of Object.entries(await authorize())) headers.set(k, v);
        if (assertion) await presentIdentity(headers, assertion);
        if (!guard) return fetch(url, { ...init, headers, ...(ca ? { tls: { ca } } : {}) } as RequestInit);
        const to = await guard(new URL(url));
        for (const [k, v] of Object.entries(to.headers)) headers.set(k, v);
        const tls = { ...(ca ? { ca } : {}), ...(to.serverName ? { serverName: to.serverName } : {}) };
        return fetch(to.url, { ...init, headers, redirect: "manual", tls } as RequestInit);
      }) as typeof fetch;
      return new StreamableHTTPClientTransport(new URL(s.url), { requestInit: { headers: { ...this.o.secrets } }, fetch: tlsFetch });
    }
    if (!s.command) throw new Error("no command");
    return new ExecaStdioTransport({ command: s.command, args: s.args, env: { ...getDefaultEnvironment(), ...this.o.secrets } });
  }

  /** Connect (if not connected) and list the tools. Never throws: failures set state and error. */
  async refresh(): Promise<void> {
    this.connecting ??= this.doRefresh().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async doRefresh(): Promise<void> {
    if (this.closed) return;
    const timeout = this.o.connectTimeoutMs ?? CONNECT_TIMEOUT_MS;
    try {
      if (!this.client) {
        // Elicitation is declared so that a server may ask the calling user (the gateway hands
        // it to that user's own session); sampling and roots are not: svc gives servers no
        // model calls and no files.
        const client = new Client({ name: "svc-proxy", version: VERSION }, { capabilities: { elicitation: { form: {}, url: {} } } });
        client.setRequestHandler(ElicitRequestSchema, async (req, extra) => this.elicit(req.params, extra.signal));
        // A server that adds or drops tools while connected (server-everything does after
        // initialize) is listed again at once, not at the next poll.
        client.setNotificationHandler(ToolListChangedNotificationSchema, async () => this.relist());
        client.setNotificationHandler(ProgressNotificationSchema, async (n) => {
          const { progressToken, ...p } = n.params;
          this.progress.get(String(progressToken))?.onProgress?.(p);
        });
        this.lastAttempt = Date.now();
        const transport = this.transport();
        await client.connect(transport, { timeout });
        // Set after connect: a failed connect must not trigger the restart path. The client's
        // own handler (not the transport's, which the SDK uses) so that calls in flight are
        // rejected at once ("Connection closed") when the server dies under them.
        client.onclose = () => this.lost(client);
        this.client = client;
        this.watch();
      }
      const tools: Tool[] = [];
      let cursor: string | undefined;
      do {
        const page = await this.client.listTools(cursor ? { cursor } : {}, { timeout });
        tools.push(...page.tools);
        cursor = page.nextCursor;
      } while (cursor);
      this.tools = tools;
      this.state = "ok";
      this.error = null;
      this.restartDelay = STDIO_RESTART_MS;
    } catch (e) {
      this.fail(describe(e, this.o.server));
    }
  }

  private fail(error: string): void {
    const was = this.state;
    this.state = "unreachable";
    this.error = error;
    this.tools = [];
    const c = this.client;
    this.client = null;
    void c?.close().catch(() => {});
    if (was !== "unreachable") this.o.log.warn("mcp server unreachable", { server: this.name, transport: this.o.server.transport, error });
    if (this.o.server.transport === "stdio") this.scheduleRestart();
  }

  /** The connection closed under us (a stdio server died): no tools until it is back. */
  private lost(client: Client): void {
    if (this.closed || this.client !== client) return;
    this.fail(`the ${this.o.server.transport === "stdio" ? "server process exited" : "connection closed"}`);
    this.o.onChange?.();
  }

  /** Ping a stdio server on an interval while it is idle (one timer for the upstream's life). */
  private watch(): void {
    if (this.o.server.transport !== "stdio" || this.pingTimer || this.closed) return;
    this.pingTimer = setInterval(() => void this.probe(), this.o.pingIntervalMs ?? STDIO_PING_INTERVAL_MS);
    this.pingTimer.unref?.();
  }

  /**
   * One liveness check, calls in flight or not (issue 31: a hung server under steady traffic
   * was found only by the next listing's timeout). Only silence counts: an error answer is an answer.
   */
  private async probe(): Promise<void> {
    const client = this.client;
    if (!client || this.state !== "ok" || this.pinging || this.connecting) return;
    this.pinging = true;
    const timeout = this.o.pingTimeoutMs ?? STDIO_PING_TIMEOUT_MS;
    try {
      await client.ping({ timeout, maxTotalTimeout: timeout });
    } catch (e) {
      if ((e as { code?: number }).code === ErrorCode.RequestTimeout && this.client === client && !this.closed) this.hung(client, timeout);
    } finally {
      this.pinging = false;
    }
  }

  /** The process is alive but does not answer: kill it and go on as for one that died. */
  private hung(client: Client, timeoutMs: number): void {
    const pid = (client.transport as ExecaStdioTransport | undefined)?.pid;
    // SIGKILL at once: a stopped or wedged process would sit out the SDK's close (stdin end, SIGTERM) for 4 s.
    if (pid) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
    this.fail(`the server process stopped answering (no answer to ping within ${timeoutMs / 1000} s); it was killed`);
    this.o.onChange?.();
  }

  private relisting: Promise<void> | null = null;

  /** The server said its tools changed: list them again (one listing at a time, coalesced). */
  private async relist(): Promise<void> {
    if (this.relisting || this.closed) return;
    this.relisting = (async () => {
      await Bun.sleep(50); // a burst of notifications (one per tool added) makes one listing
      await this.refresh();
      if (this.state === "ok") this.o.onChange?.();
    })().finally(() => {
      this.relisting = null;
    });
  }

  /**
   * A call wants this server and it is not reachable: try again now instead of at the next
   * poll or the end of a restart's backoff, at most once every RETRY_NOW_MIN_MS (a server that
   * keeps crashing is not started once per call).
   */
  async retryNow(): Promise<void> {
    if (this.closed || this.state === "ok") return;
    if (this.connecting) return this.connecting;
    if (Date.now() - this.lastAttempt < RETRY_NOW_MIN_MS) return;
    if (this.restartTimer) {
      clearTimeout(this.restartTimer);
      this.restartTimer = null;
    }
    await this.refresh();
    if ((this.state as UpstreamState) === "ok") {
      this.o.log.info("mcp server reached again", { server: this.name, tools: this.tools.length });
      this.o.onChange?.();
    }
  }

  /**
   * An elicitation from the server during a call: to the calling user alone. MCP links such a
   * request to a call only over HTTP streams, so the call is the one in flight on this server;
   * with calls of more than one user in flight, whose it is cannot be told and it is declined.
   */
  private async elicit(params: ElicitRequest["params"], signal: AbortSignal): Promise<ElicitResult> {
    const users = new Set([...this.calls].map((c) => c.userId));
    if (users.size !== 1) {
      this.o.log.warn("mcp elicitation declined", { server: this.name, why: users.size === 0 ? "no call in flight" : "calls of several users in flight" });
      if (users.size === 0) throw new McpError(ErrorCode.InvalidRequest, "svc takes elicitations only during a tool call");
      return { action: "decline" };
    }
    const call = [...this.calls].reverse().find((c) => c.elicit);
    if (!call?.elicit) return { action: "decline" };
    return call.elicit(params, signal);
  }

  private scheduleRestart(): void {
    if (this.closed || this.restartTimer) return;
    const delay = this.restartDelay;
    this.restartDelay = Math.min(this.restartDelay * 2, STDIO_RESTART_MAX_MS);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      void this.refresh().then(() => {
        if (this.state === "ok") {
          this.o.log.info("mcp server restarted", { server: this.name, tools: this.tools.length });
          this.o.onChange?.();
        }
      });
    }, delay);
  }

  /** Call one upstream tool. Throws UpstreamError when no result came back. */
  async call(tool: string, args: Record<string, unknown>, ctx: CallContext | AbortSignal = { userId: "" }): Promise<CallToolResult> {
    const call: CallContext = ctx instanceof AbortSignal ? { userId: "", signal: ctx } : ctx;
    const signal = call.signal;
    const client = this.client;
    if (!client || this.state !== "ok") throw new UpstreamError("unreachable", `MCP server "${this.name}" is unreachable: ${this.error ?? "not connected"}`);
    const timeout = this.o.callTimeoutMs ?? CALL_TIMEOUT_MS;
    let result: CallToolResult;
    const token = call.onProgress ? `svc-${++this.nextToken}` : null;
    this.calls.add(call);
    if (token) this.progress.set(token, call);
    try {
      const meta = { ...(token ? { progressToken: token } : {}), ...call.trace };
      const params = { name: tool, arguments: args, ...(Object.keys(meta).length > 0 ? { _meta: meta } : {}) };
      // In the call's scope: the fetch that sends it presents this call's identity (upstream-identity.ts) and its trace context (call-trace.ts).
      result = (await callScope.run(call, async () =>
        withOutgoingTrace(call.trace, async () => client.callTool(params, undefined, { timeout, maxTotalTimeout: timeout, ...(signal ? { signal } : {}) })),
      )) as CallToolResult;
    } catch (e) {
      if (signal?.aborted) throw new UpstreamError("cancelled", `the call to ${this.name}.${tool} was cancelled`);
      const err = e as { code?: number; message?: string };
      if (err.code === ErrorCode.RequestTimeout) throw new UpstreamError("timeout", `MCP server "${this.name}" did not answer ${tool} within ${timeout / 1000} s`);
      throw new UpstreamError("upstream_error", `MCP server "${this.name}" failed on ${tool}: ${err.message ?? String(e)}`);
    } finally {
      this.calls.delete(call);
      if (token) this.progress.delete(token);
    }
    const limit = this.o.resultLimitBytes ?? MCP_RESULT_LIMIT_BYTES;
    const size = Buffer.byteLength(JSON.stringify(result));
    if (size > limit) throw new UpstreamError("result_too_large", `the result of ${this.name}.${tool} is ${size} bytes, over the limit MCP_RESULT_LIMIT_BYTES (${limit} bytes)`);
    return result;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    if (this.pingTimer) clearInterval(this.pingTimer);
    const c = this.client;
    this.client = null;
    await c?.close().catch(() => {});
  }
}

/** A connect or list failure in one line; never the secrets (they are headers or env, not in the URL). */
function describe(e: unknown, s: BundleToolServer): string {
  const msg = (e as Error)?.message ?? String(e);
  const where = s.transport === "http" ? (s.url ? new URL(s.url).origin : "?") : s.command;
  return `${where}: ${msg.split("\n")[0]!.slice(0, 300)}`;
}
