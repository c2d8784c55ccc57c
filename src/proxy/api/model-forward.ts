// Model forwarding: the chat request goes to `{endpoint}/chat/completions`, where the
// profile's endpoint is the OpenAI-style base URL including its version path (for example
// https://api.openai.com/v1 or https://llm.internal/v1). The answer is relayed as it comes:
// an SSE stream is piped chunk by chunk, never buffered. Upstream failures come back in
// OpenAI error format; their bodies are read only up to ERROR_BODY_LIMIT (src/contract/error-body.ts).
import type { BundleModelProfile } from "../../contract/bundle.ts";
import { readErrorBody } from "../../contract/error-body.ts";
import { type EndpointAttempts, endpointAttempts } from "./endpoint-attempts.ts";

export const CHAT_COMPLETIONS_PATH = "/chat/completions";

export type OpenAIError = { error: { message: string; type: string; code: string | number | null; [k: string]: unknown } };

export function openAIError(status: number, message: string, type: string, code: string | number | null, extra: Record<string, unknown> = {}): Response {
  const body: OpenAIError = { error: { message, type, code, ...extra } };
  return Response.json(body, { status });
}

export function chatCompletionsUrl(endpoint: string): string {
  return `${endpoint.replace(/\/+$/, "")}${CHAT_COMPLETIONS_PATH}`;
}

export async function forwardChat(input: {
  profile: BundleModelProfile;
  apiKey: string | null;
  /** The request body as sent upstream (JSON), and whether it asks for a stream. */
  body: Uint8Array<ArrayBuffer>;
  stream: boolean;
  ca: string[] | null;
  signal?: AbortSignal;
  fetchImpl?: typeof fetch;
  /** Where the attempt is noted (heartbeat, readiness); the process-wide table by default. */
  attempts?: EndpointAttempts;
  /** The W3C trace context passed on to the provider (`traceparent`, `tracestate`; ../tracing.ts). */
  traceHeaders?: Record<string, string>;
}): Promise<Response> {
  const url = chatCompletionsUrl(input.profile.endpoint);
  const headers: Record<string, string> = { ...input.traceHeaders, "content-type": "application/json", accept: input.stream ? "text/event-stream" : "application/json" };
  if (input.apiKey) headers.authorization = `Bearer ${input.apiKey}`;
  const init: RequestInit & { tls?: { ca?: string[] } } = { method: "POST", headers, body: input.body, redirect: "error" };
  if (input.signal) init.signal = input.signal;
  if (input.ca) init.tls = { ca: input.ca };
  let upstream: Response;
  try {
    upstream = await (input.fetchImpl ?? fetch)(url, init);
    (input.attempts ?? endpointAttempts).record(input.profile.id, null);
  } catch (e) {
    if (!input.signal?.aborted) (input.attempts ?? endpointAttempts).record(input.profile.id, (e as Error).message);
    return openAIError(502, `the model endpoint of profile "${input.profile.display_name}" is unreachable: ${(e as Error).message}`, "upstream_error", "upstream_unreachable");
  }
  if (!upstream.ok) {
    const { text, cut } = await readErrorBody(upstream);
    let parsed: Partial<OpenAIError> | null = null;
    try {
      if (!cut) parsed = JSON.parse(text) as Partial<OpenAIError>;
    } catch {}
    const e = parsed?.error;
    if (e && typeof e === "object" && typeof e.message === "string") {
      // Only what the OpenAI format allows is relayed; another code (an object, a boolean) is replaced by the status.
      const code = typeof e.code === "string" || typeof e.code === "number" ? e.code : upstream.status;
      return openAIError(upstream.status, e.message, typeof e.type === "string" ? e.type : "upstream_error", code);
    }
    return openAIError(upstream.status, `the model endpoint answered ${upstream.status}${text ? `: ${text.slice(0, 500)}` : ""}`, "upstream_error", upstream.status);
  }
  const out = new Headers({ "content-type": upstream.headers.get("content-type") ?? "application/json" });
  if ((out.get("content-type") ?? "").includes("text/event-stream")) {
    out.set("cache-control", "no-cache");
    out.set("x-accel-buffering", "no");
  }
  return new Response(upstream.body, { status: upstream.status, headers: out });
}
