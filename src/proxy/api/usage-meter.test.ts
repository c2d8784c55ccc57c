import { describe, expect, test } from "bun:test";
import { askForUsage, costOf, meterEvent, meterStream, usageOf } from "./usage-meter.ts";

const enc = new TextEncoder();
const chunk = (content: string) => `data: {"id":"c","choices":[{"index":0,"delta":{"content":"${content}"}}],"usage":null}\n\n`;
const usageChunk = 'data: {"id":"c","choices":[],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}\n\n';

async function relay(pieces: string[], strip: boolean) {
  let ended: { usage: unknown; ok: boolean } | null = null;
  const src = new ReadableStream<Uint8Array>({
    start(c) {
      for (const p of pieces) c.enqueue(enc.encode(p));
      c.close();
    },
  });
  const text = await new Response(meterStream(src, { strip, onEnd: (usage, ok) => (ended = { usage, ok }) })).text();
  return { text, ended: ended as { usage: unknown; ok: boolean } | null };
}

describe("usage meter", () => {
  test("asks for streamed usage only when the caller did not", () => {
    expect(askForUsage(true, undefined)).toEqual({ streamOptions: { include_usage: true }, callerAsked: false });
    expect(askForUsage(true, { include_usage: false, x: 1 })).toEqual({ streamOptions: { include_usage: true, x: 1 }, callerAsked: false });
    expect(askForUsage(true, { include_usage: true })).toEqual({ streamOptions: null, callerAsked: true });
    expect(askForUsage(undefined, undefined)).toEqual({ streamOptions: null, callerAsked: true });
  });

  test("usage and cost", () => {
    expect(usageOf({ usage: { prompt_tokens: 1, completion_tokens: 2 } })).toEqual({ prompt_tokens: 1, completion_tokens: 2 });
    expect(usageOf({ usage: { prompt_tokens: -1, completion_tokens: 2 } })).toBeNull();
    expect(usageOf({ usage: null })).toBeNull();
    expect(costOf({ prompt_tokens: 1_000_000, completion_tokens: 500_000 }, { prompt: 3, completion: 15 })).toBe(10.5);
    expect(costOf({ prompt_tokens: 1, completion_tokens: 1 }, undefined)).toBeUndefined();
  });

  test("stripped: the usage-only chunk and the usage:null fields are gone, the rest unchanged", async () => {
    const all = chunk("a") + chunk("b") + usageChunk + "data: [DONE]\n\n";
    // cut at every position: events split across reads are still seen whole
    for (const at of [1, 10, chunk("a").length - 1, chunk("a").length + 5, all.length - 3]) {
      const { text, ended } = await relay([all.slice(0, at), all.slice(at)], true);
      expect(text).toBe(chunk("a").replace(',"usage":null', "") + chunk("b").replace(',"usage":null', "") + "data: [DONE]\n\n");
      expect(ended).toEqual({ usage: { prompt_tokens: 7, completion_tokens: 3 }, ok: true });
    }
  });

  test("not stripped: byte for byte; CRLF events; a tail without a blank line", async () => {
    const all = chunk("a").replace(/\n/g, "\r\n") + usageChunk + "data: [DONE]";
    const { text, ended } = await relay([all], false);
    expect(text).toBe(all);
    expect(ended!.usage).toEqual({ prompt_tokens: 7, completion_tokens: 3 });
  });

  test("usage on a chunk that also has choices is kept and read", () => {
    const e = 'data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}\n\n';
    expect(meterEvent(e, true)).toEqual({ out: e, usage: { prompt_tokens: 1, completion_tokens: 1 } });
  });

  test("a caller that goes away ends the call as not ok", async () => {
    let ended: boolean | null = null;
    const src = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(enc.encode(chunk("a")));
      },
    });
    const s = meterStream(src, { strip: true, onEnd: (_u, ok) => (ended = ok) });
    const r = s.getReader();
    await r.read();
    await r.cancel();
    expect(ended as boolean | null).toBe(false);
  });
});
