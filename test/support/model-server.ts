// A model provider double: an HTTPS server (test CA from tls.ts) speaking the OpenAI
// chat-completions protocol at {endpoint}/chat/completions with endpoint = https://127.0.0.1:<port>/v1.
// Non-streaming JSON answers, SSE streams (`data:` chunks, then `data: [DONE]`), tool calls in
// `delta.tool_calls`, error statuses in OpenAI error format. It records every request it got.
// Usage is reported in the real wire format: `usage` on a completion; on a stream only when the
// request asks (`stream_options.include_usage`): then every chunk has `"usage":null` and one last
// chunk with `choices: []` carries the counts. Counts: prompt = words in the messages,
// completion = words of the answer (or `behaviour.usage`).
// A stream can be held after its first chunk until the test releases it, which proves the
// client saw that chunk before the upstream sent the rest (no timing involved).
import { testTls } from "./tls.ts";

/** `raw`: the body exactly as received (`body` is it parsed, or null); `peer`: the client's address:port (one per connection). */
export type RecordedRequest = { method: string; path: string; headers: Record<string, string>; body: any; raw: string; peer: string };

export type ModelBehaviour = {
  /** Answer text; streamed as one chunk per word. */
  text: string;
  /** Answer with a tool call instead of text. */
  toolCall?: { id?: string; name: string; arguments: string } | null;
  /** Answer with this status and an OpenAI error body (or `rawBody` as is). */
  error?: { status: number; message?: string; rawBody?: string } | null;
  /** When set, a stream stops after its first chunk until this promise resolves. */
  holdAfterFirstChunk?: Promise<void> | null;
  /** The counts to report instead of the word counts. */
  usage?: { prompt_tokens: number; completion_tokens: number } | null;
};

const words = (t: string) => t.split(/\s+/).filter(Boolean).length;

/** The double's prompt count: the words of every message's text content. */
export function promptWords(body: any): number {
  let n = 0;
  for (const m of Array.isArray(body?.messages) ? body.messages : []) {
    if (typeof m?.content === "string") n += words(m.content);
    else if (Array.isArray(m?.content)) for (const p of m.content) if (typeof p?.text === "string") n += words(p.text);
  }
  return n;
}

export type ModelServer = {
  url: string;
  /** What a model profile's endpoint field holds (includes /v1). */
  endpoint: string;
  caFile: string;
  requests: RecordedRequest[];
  /** GETs of the base URL: the runtime's reachability probe (no model call), kept apart from `requests`. */
  probes: RecordedRequest[];
  behaviour: ModelBehaviour;
  /**
   * Scripted turns: when set, each chat-completions request asks it how to answer (given the
   * request body); what it returns overrides `behaviour` for that request, null keeps it.
   * E.g. answer a tool call first, then text once the request carries the tool's result.
   */
  respond: ((body: any) => Partial<ModelBehaviour> | null | undefined) | null;
  /** Resolves when a stream has sent its first chunk (for the hold test). */
  firstChunkSent(): Promise<void>;
  stop(): Promise<void>;
};

const enc = new TextEncoder();
const sse = (obj: unknown) => enc.encode(`data: ${JSON.stringify(obj)}\n\n`);

export function startModelServer(opts: { apiKey?: string } = {}): ModelServer {
  const tls = testTls();
  const requests: RecordedRequest[] = [];
  const probes: RecordedRequest[] = [];
  let firstChunk = Promise.withResolvers<void>();
  const ms: ModelServer = {
    url: "",
    endpoint: "",
    caFile: tls.caFile,
    requests,
    probes,
    behaviour: { text: "Hello from the model" },
    respond: null,
    firstChunkSent: async () => firstChunk.promise,
    async stop() {
      await server.stop(true);
    },
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    tls: { cert: tls.cert, key: tls.key },
    async fetch(req) {
      const path = new URL(req.url).pathname;
      const ip = server.requestIP(req);
      const peer = `${ip?.address}:${ip?.port}`;
      const raw = await req.text();
      let body: any = null;
      try {
        body = JSON.parse(raw);
      } catch {}
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => {
        headers[k] = v;
      });
      if (req.method === "GET" && /^\/v1\/?$/.test(path)) {
        probes.push({ method: req.method, path, headers, body, raw, peer });
        return Response.json({ error: { message: "not found", type: "invalid_request_error", code: null } }, { status: 404 });
      }
      requests.push({ method: req.method, path, headers, body, raw, peer });
      if (opts.apiKey && req.headers.get("authorization") !== `Bearer ${opts.apiKey}`) {
        return Response.json({ error: { message: "Incorrect API key provided", type: "invalid_request_error", code: "invalid_api_key" } }, { status: 401 });
      }
      if (req.method !== "POST" || path !== "/v1/chat/completions") return Response.json({ error: { message: "not found", type: "invalid_request_error", code: null } }, { status: 404 });
      const b: ModelBehaviour = { ...ms.behaviour, ...(ms.respond?.(body) ?? {}) };
      if (b.error) {
        if (b.error.rawBody !== undefined) return new Response(b.error.rawBody, { status: b.error.status });
        return Response.json({ error: { message: b.error.message ?? "upstream failure", type: "server_error", code: "overloaded" } }, { status: b.error.status });
      }
      const id = `chatcmpl-${requests.length}`;
      const model = body?.model ?? "unknown";
      const created = 1_700_000_000;
      if (!body?.stream) {
        const message = b.toolCall
          ? { role: "assistant", content: null, tool_calls: [{ id: b.toolCall.id ?? "call_1", type: "function", function: { name: b.toolCall.name, arguments: b.toolCall.arguments } }] }
          : { role: "assistant", content: b.text };
        return Response.json({ id, object: "chat.completion", created, model, choices: [{ index: 0, message, finish_reason: b.toolCall ? "tool_calls" : "stop" }], usage: usageOf(b, body) });
      }
      const withUsage = body?.stream_options?.include_usage === true;
      const chunk = (delta: unknown, finish: string | null = null) => ({
        id,
        object: "chat.completion.chunk",
        created,
        model,
        choices: [{ index: 0, delta, finish_reason: finish }],
        ...(withUsage ? { usage: null } : {}),
      });
      const parts: Uint8Array[] = [sse(chunk({ role: "assistant", content: "" }))];
      if (b.toolCall) {
        const half = Math.ceil(b.toolCall.arguments.length / 2);
        parts.push(sse(chunk({ tool_calls: [{ index: 0, id: b.toolCall.id ?? "call_1", type: "function", function: { name: b.toolCall.name, arguments: b.toolCall.arguments.slice(0, half) } }] })));
        parts.push(sse(chunk({ tool_calls: [{ index: 0, function: { arguments: b.toolCall.arguments.slice(half) } }] })));
        parts.push(sse(chunk({}, "tool_calls")));
      } else {
        b.text.split(/(?= )/).forEach((w) => parts.push(sse(chunk({ content: w }))));
        parts.push(sse(chunk({}, "stop")));
      }
      if (withUsage) parts.push(sse({ id, object: "chat.completion.chunk", created, model, choices: [], usage: usageOf(b, body) }));
      parts.push(enc.encode("data: [DONE]\n\n"));
      const hold = b.holdAfterFirstChunk ?? null;
      const signal = firstChunk;
      firstChunk = Promise.withResolvers<void>();
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(parts[0]!);
          signal.resolve();
          if (hold) await hold;
          for (const p of parts.slice(1)) controller.enqueue(p);
          controller.close();
        },
      });
      return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
    },
  });
  ms.url = `https://127.0.0.1:${server.port}`;
  ms.endpoint = `${ms.url}/v1`;
  return ms;
}

function usageOf(b: ModelBehaviour, body: any) {
  const u = b.usage ?? { prompt_tokens: promptWords(body), completion_tokens: b.toolCall ? 1 : words(b.text) };
  return { ...u, total_tokens: u.prompt_tokens + u.completion_tokens };
}

/** Parse an SSE body into its `data:` payloads (JSON objects, and "[DONE]"). */
export function parseSse(text: string): (any | "[DONE]")[] {
  return text
    .split("\n\n")
    .map((e) => e.trim())
    .filter((e) => e.startsWith("data:"))
    .map((e) => e.slice(5).trim())
    .map((d) => (d === "[DONE]" ? "[DONE]" : JSON.parse(d)));
}
