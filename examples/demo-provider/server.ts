// svc's demo model provider: a local HTTPS server speaking the chat-completions protocol
// (POST /v1/chat/completions, streamed or not; GET /v1/models) whose answers come from
// respond.ts. scripts/start.sh --demo starts it with a certificate from a CA of its own and
// hands that CA to the runtime (SVC_PROXY_CA_FILE), so the endpoint is trusted automatically.
//   DEMO_PROVIDER_CERT=… DEMO_PROVIDER_KEY=… DEMO_PROVIDER_PORT=8443 bun examples/demo-provider/server.ts
import { readFileSync } from "node:fs";
import { type Answer, respond } from "./respond.ts";

export const MODEL = "svc-demo";

const enc = new TextEncoder();
const sse = (obj: unknown) => enc.encode(`data: ${JSON.stringify(obj)}\n\n`);
const count = (t: string) => t.split(/\s+/).filter(Boolean).length;

function completion(answer: Answer, model: string, promptTokens: number) {
  const id = `chatcmpl-demo-${crypto.randomUUID()}`;
  const created = Math.floor(Date.now() / 1000);
  const completionTokens = "text" in answer ? count(answer.text) : count(answer.toolCall.arguments) + 1;
  return { id, created, model, usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens } };
}

export function handle(body: any): Response {
  const answer = respond(body);
  const model = typeof body?.model === "string" ? body.model : MODEL;
  const prompt = count(JSON.stringify(body?.messages ?? []));
  const { id, created, usage } = completion(answer, model, prompt);
  const toolCall = "toolCall" in answer ? { index: 0, id: `call_${crypto.randomUUID().slice(0, 8)}`, type: "function", function: answer.toolCall } : null;
  if (!body?.stream) {
    const message = toolCall
      ? { role: "assistant", content: null, tool_calls: [{ id: toolCall.id, type: "function", function: toolCall.function }] }
      : { role: "assistant", content: (answer as { text: string }).text };
    return Response.json({ id, object: "chat.completion", created, model, choices: [{ index: 0, message, finish_reason: toolCall ? "tool_calls" : "stop" }], usage });
  }
  const withUsage = body?.stream_options?.include_usage === true;
  const chunk = (delta: unknown, finish: string | null = null) =>
    sse({ id, object: "chat.completion.chunk", created, model, choices: [{ index: 0, delta, finish_reason: finish }], ...(withUsage ? { usage: null } : {}) });
  const parts = [chunk({ role: "assistant", content: "" })];
  if (toolCall) parts.push(chunk({ tool_calls: [toolCall] }), chunk({}, "tool_calls"));
  else for (const w of (answer as { text: string }).text.split(/(?= )/)) parts.push(chunk({ content: w }));
  if (!toolCall) parts.push(chunk({}, "stop"));
  if (withUsage) parts.push(sse({ id, object: "chat.completion.chunk", created, model, choices: [], usage }));
  parts.push(enc.encode("data: [DONE]\n\n"));
  return new Response(new Blob(parts), { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
}

async function route(req: Request): Promise<Response> {
  const path = new URL(req.url).pathname;
  if (req.method === "GET" && path === "/v1/models") return Response.json({ object: "list", data: [{ id: MODEL, object: "model", created: 0, owned_by: "svc-demo" }] });
  if (req.method !== "POST" || path !== "/v1/chat/completions")
    return Response.json({ error: { message: `no route ${req.method} ${path}`, type: "invalid_request_error", code: null } }, { status: 404 });
  let body: unknown;
  try {
    body = await req.json();
  } catch {
    return Response.json({ error: { message: "the body is not JSON", type: "invalid_request_error", code: null } }, { status: 400 });
  }
  return handle(body);
}

if (import.meta.main) {
  const need = (name: string) => process.env[name] || (console.error(`demo provider: ${name} is not set`), process.exit(2));
  const server = Bun.serve({
    hostname: process.env.DEMO_PROVIDER_HOST || "127.0.0.1",
    port: Number(process.env.DEMO_PROVIDER_PORT || 8443),
    tls: { cert: readFileSync(need("DEMO_PROVIDER_CERT"), "utf8"), key: readFileSync(need("DEMO_PROVIDER_KEY"), "utf8") },
    fetch: route,
  });
  console.log(`demo provider: https://${server.hostname}:${server.port}/v1 (model ${MODEL})`);
  for (const sig of ["SIGINT", "SIGTERM"] as const) process.on(sig, () => void server.stop(true).then(() => process.exit(0)));
}
