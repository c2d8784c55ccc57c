import { describe, expect, test } from "bun:test";
import { MAX_JSON_DEPTH, nestsDeeperThan, readJsonBody } from "./json-body.ts";

const post = (body: BodyInit | null, headers: Record<string, string> = {}) => new Request("http://localhost/v1/tools/decide", { method: "POST", body, headers, duplex: "half" } as RequestInit);

/** An endless body that counts what was pulled from it and whether it was cancelled. */
function endless(chunkBytes: number) {
  const seen = { pulls: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      seen.pulls++;
      c.enqueue(new Uint8Array(chunkBytes).fill(0x20));
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  return { stream, seen };
}

describe("readJsonBody", () => {
  test("JSON within the limit", async () => {
    expect(await readJsonBody(post('{"tool":"crm.read","args":{"q":"é"}}'), 1024)).toEqual({ ok: true, value: { tool: "crm.read", args: { q: "é" } } });
  });

  test("malformed JSON, an empty body and invalid UTF-8 are invalid_json (400)", async () => {
    for (const body of ['{"tool":', "", "not json", new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x7d])]) {
      const r = await readJsonBody(post(body), 1024);
      expect(r).toMatchObject({ ok: false, status: 400, code: "invalid_json" });
    }
  });

  test("a declared Content-Length over the limit is refused before anything is read", async () => {
    const { stream, seen } = endless(1024);
    const r = await readJsonBody(post(stream, { "content-length": String(10 * 1024 * 1024) }), 1024 * 1024);
    expect(r).toMatchObject({ ok: false, status: 413, code: "body_too_large" });
    expect(seen.pulls).toBeLessThanOrEqual(1); // a stream may pull once on its own when created
  });

  test("a body without a length (chunked) stops being read as soon as it passes the limit", async () => {
    // Endless: reading it whole would never finish.
    const { stream, seen } = endless(64 * 1024);
    const r = await readJsonBody(post(stream), 1024 * 1024);
    expect(r).toMatchObject({ ok: false, status: 413, code: "body_too_large" });
    expect(seen.pulls).toBeLessThanOrEqual(1024 / 64 + 3);
    expect(seen.cancelled).toBe(true);
  });

  test("nesting deeper than any real request is json_too_deep (400), not a stack overflow later", async () => {
    const deep = (n: number) => `{"args":{"a":${"[".repeat(n)}${"]".repeat(n)}}}`;
    expect((await readJsonBody(post(deep(MAX_JSON_DEPTH - 2)), 1024 * 1024)).ok).toBe(true);
    expect(await readJsonBody(post(deep(100_000)), 1024 * 1024)).toMatchObject({ ok: false, status: 400, code: "json_too_deep" });
  });
});

describe("nestsDeeperThan", () => {
  test("counts arrays and objects, not scalars", () => {
    expect(nestsDeeperThan("x", 0)).toBe(false);
    expect(nestsDeeperThan({ a: [1, { b: 2 }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [1, { b: 2 }] }, 2)).toBe(true);
  });
});
