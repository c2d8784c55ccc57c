// Token usage of a model call (issue 16), read from the provider's own `usage` field.
//
// Not streamed: the completion is one JSON document; its `usage` is read and the body relayed
// byte for byte. Streamed: the proxy asks for usage (`stream_options.include_usage: true`),
// which makes an OpenAI-style provider add `"usage":null` to every chunk and send one last
// chunk with `choices: []` and the counts. When the caller did not ask for usage itself, that
// last chunk is removed and so are the `"usage":null` fields, so the front end receives what
// it would have received without the proxy asking. Events are relayed as soon as they are
// whole (an event is never held for the next one); the bytes of an event left untouched are
// unchanged. A provider that ignores stream_options simply reports no usage.
import type { ModelPrice } from "../../contract/bundle.ts";

export type Usage = { prompt_tokens: number; completion_tokens: number };

/**
 * The `stream_options` to send upstream so that a streamed call reports its usage (null: leave
 * the request as it is), and whether the caller itself asked for streamed usage.
 */
export function askForUsage(stream: unknown, streamOptions: unknown): { streamOptions: Record<string, unknown> | null; callerAsked: boolean } {
  if (stream !== true) return { streamOptions: null, callerAsked: true };
  const opts = streamOptions && typeof streamOptions === "object" && !Array.isArray(streamOptions) ? (streamOptions as Record<string, unknown>) : {};
  if (opts.include_usage === true) return { streamOptions: null, callerAsked: true };
  return { streamOptions: { ...opts, include_usage: true }, callerAsked: false };
}

const count = (v: unknown): number | null => (typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= 2_147_483_647 ? v : null);

/** The `usage` of a completion or chunk, when it carries whole counts. */
export function usageOf(doc: unknown): Usage | null {
  const u = doc && typeof doc === "object" ? (doc as { usage?: unknown }).usage : null;
  if (!u || typeof u !== "object") return null;
  const p = count((u as Record<string, unknown>).prompt_tokens);
  const c = count((u as Record<string, unknown>).completion_tokens);
  return p === null || c === null ? null : { prompt_tokens: p, completion_tokens: c };
}

/** Cost at the profile's price per 1M tokens; undefined without a price. Rounded to 1e-9. */
export function costOf(usage: Usage, price: ModelPrice | undefined): number | undefined {
  if (!price) return undefined;
  return Math.round((usage.prompt_tokens * price.prompt + usage.completion_tokens * price.completion) * 1000) / 1e9;
}

// An event boundary: a blank line (LF or CRLF line ends).
const BOUNDARY = /\r?\n\r?\n/g;
const USAGE_OBJECT = /"usage"\s*:\s*\{/;
const USAGE_NULL = /,\s*"usage"\s*:\s*null|"usage"\s*:\s*null\s*,?/g;

/** How one whole SSE event is relayed: as is, rewritten, or dropped (null); and the usage it carried. */
export function meterEvent(event: string, strip: boolean): { out: string | null; usage: Usage | null } {
  if (USAGE_OBJECT.test(event)) {
    const data = event.replace(/^data:\s?/m, "").trim();
    let doc: unknown = null;
    try {
      doc = JSON.parse(data);
    } catch {
      return { out: event, usage: null };
    }
    const usage = usageOf(doc);
    const choices = (doc as { choices?: unknown }).choices;
    if (strip && Array.isArray(choices) && choices.length === 0) return { out: null, usage };
    return { out: event, usage };
  }
  if (strip && event.includes('"usage"')) return { out: event.replace(USAGE_NULL, ""), usage: null };
  return { out: event, usage: null };
}

/**
 * Relays an SSE body, reading the usage it carries; `onEnd` is called once, when the stream
 * ended (ok) or failed or the caller went away (not ok), with the last usage seen.
 */
export function meterStream(src: ReadableStream<Uint8Array>, o: { strip: boolean; onEnd: (usage: Usage | null, ok: boolean) => void }): ReadableStream<Uint8Array> {
  const reader = src.getReader();
  const dec = new TextDecoder();
  const enc = new TextEncoder();
  let pending = "";
  let usage: Usage | null = null;
  let ended = false;
  const end = (ok: boolean) => {
    if (ended) return;
    ended = true;
    o.onEnd(usage, ok);
  };
  const take = (text: string): string => {
    let out = "";
    let from = 0;
    BOUNDARY.lastIndex = 0;
    for (let m = BOUNDARY.exec(text); m; m = BOUNDARY.exec(text)) {
      const stop = m.index + m[0].length;
      const r = meterEvent(text.slice(from, stop), o.strip);
      if (r.usage) usage = r.usage;
      if (r.out !== null) out += r.out;
      from = stop;
    }
    pending = text.slice(from);
    return out;
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        // Read until there is something to relay: a pull that enqueues nothing is not repeated.
        for (;;) {
          const { done, value } = await reader.read();
          if (done) {
            // What followed the last blank line is not a whole event: metered, relayed as it came.
            const last = take(pending + dec.decode());
            const r = pending ? meterEvent(pending, o.strip) : { out: null, usage: null };
            if (r.usage) usage = r.usage;
            const tail = last + (r.out ?? "");
            if (tail) controller.enqueue(enc.encode(tail));
            controller.close();
            end(true);
            return;
          }
          const out = take(pending + dec.decode(value, { stream: true }));
          if (out) {
            controller.enqueue(enc.encode(out));
            return;
          }
        }
      } catch (e) {
        end(false);
        controller.error(e);
      }
    },
    async cancel(reason) {
      end(false);
      return reader.cancel(reason);
    },
  });
}
