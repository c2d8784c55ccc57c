// Spans of an MCP tool call through the gateway (issue 35), kept out of gateway.ts and
// upstream.ts: the gateway's call (a server span, child of the caller's trace context), which
// holds the pipeline's decision and spool-write spans and the upstream call (a client span),
// whose trace context goes to the MCP server both ways MCP servers read one:
//   - in the request's `params._meta` (`traceparent`, `tracestate`): MCP's convention for
//     trace context (SEP-414), the one that also reaches a stdio server; the MCP Python SDK
//     (2.x) reads it on its server side and writes it on its client side, so Open WebUI's
//     MCP client sends svc its own that way;
//   - as the HTTP `traceparent` header of a Streamable HTTP server's POST, for servers
//     instrumented at the HTTP layer instead.
// The caller's context is taken from `_meta` first, then from the HTTP request's header.
// Span names and attributes follow the MCP semantic conventions (`tools/call <tool>`,
// `mcp.method.name`, `gen_ai.tool.name`); never the arguments or the result. Tracing off and
// no caller context: no span work at all (`traces`), as on the decision's hot path.
import { AsyncLocalStorage } from "node:async_hooks";
import { type Context, ROOT_CONTEXT, SpanKind } from "@opentelemetry/api";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { type Tracing, traces } from "../../tracing/index.ts";

type HeaderRecord = Record<string, string | string[] | undefined>;

/** The caller's trace context: `_meta.traceparent` (SEP-414), else the HTTP request's `traceparent`; none: ROOT_CONTEXT. */
export function mcpCallParent(t: Tracing, meta: Record<string, unknown> | undefined, httpHeaders: HeaderRecord | undefined): Context {
  const from = (get: (k: string) => unknown): Headers | null => {
    const tp = get("traceparent");
    if (typeof tp !== "string") return null;
    const h = new Headers({ traceparent: tp });
    const ts = get("tracestate");
    if (typeof ts === "string") h.set("tracestate", ts);
    return h;
  };
  const headers = from((k) => meta?.[k]) ?? from((k) => httpHeaders?.[k]);
  return headers ? t.incoming(headers) : ROOT_CONTEXT;
}

const callAttributes = (tool: string, server: string) => ({ "mcp.method.name": "tools/call", "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": tool, "svc.mcp.server": server });

/** The gateway's call of `name` (`<server>.<tool>`) in a server span; fn gets the context its own spans go under. */
export async function traceMcpCall(t: Tracing, parent: Context, name: string, server: string | null, fn: (ctx: Context) => Promise<CallToolResult>): Promise<CallToolResult> {
  if (!traces(t, parent)) return fn(ROOT_CONTEXT);
  return t.span(`tools/call ${name}`, parent, { kind: SpanKind.SERVER, attributes: callAttributes(name, server ?? "") }, async (span, ctx) => {
    const result = await fn(ctx);
    if (result.isError) span.setAttribute("error.type", "tool_error");
    return result;
  });
}

/**
 * The upstream call of `tool` on `server` in a client span; fn gets the trace headers to pass
 * on (undefined when nothing is traced), which `Upstream.call` puts in `_meta` and, over HTTP,
 * in the request's headers (`withTraceHeaders`).
 */
export async function traceUpstreamCall(
  t: Tracing,
  parent: Context,
  server: string,
  tool: string,
  fn: (trace: Record<string, string> | undefined) => Promise<CallToolResult>,
): Promise<CallToolResult> {
  if (!traces(t, parent)) return fn(undefined);
  return t.span(`tools/call ${tool}`, parent, { kind: SpanKind.CLIENT, attributes: callAttributes(tool, server) }, async (span, ctx) => {
    const result = await fn(t.outgoing(ctx));
    if (result.isError) span.setAttribute("error.type", "tool_error");
    return result;
  });
}

/** The trace headers of the upstream call in flight in this async context (read by the HTTP transport's fetch). */
const outgoing = new AsyncLocalStorage<Record<string, string>>();

/** Runs fn with `trace` as the HTTP trace headers of the requests it makes (none: fn as is). */
export async function withOutgoingTrace<T>(trace: Record<string, string> | undefined, fn: () => Promise<T>): Promise<T> {
  return trace && Object.keys(trace).length > 0 ? outgoing.run(trace, fn) : fn();
}

/** A fetch's init with the trace headers of the call in flight added (unchanged when there are none). */
export function withTraceHeaders(init: RequestInit | undefined): RequestInit | undefined {
  const trace = outgoing.getStore();
  if (!trace) return init;
  const headers = new Headers(init?.headers);
  for (const [k, v] of Object.entries(trace)) headers.set(k, v);
  return { ...init, headers };
}
