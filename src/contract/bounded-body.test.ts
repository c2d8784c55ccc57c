import { describe, expect, test } from "bun:test";
import { readBounded } from "./bounded-body.ts";

/** A body of `total` bytes in `chunk`-byte pieces (endless without a total) that records what was pulled and whether it was cancelled. */
function body(o: { total?: number; chunk: number }) {
  const seen = { pulled: 0, cancelled: false };
  let n = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(c) {
      if (o.total !== undefined && seen.pulled >= o.total) return c.close();
      const size = o.total === undefined ? o.chunk : Math.min(o.chunk, o.total - seen.pulled);
      seen.pulled += size;
      c.enqueue(Uint8Array.from({ length: size }, () => n++ % 251));
    },
    cancel() {
      seen.cancelled = true;
    },
  });
  return { stream, seen };
}

const expected = (size: number) => Uint8Array.from({ length: size }, (_, i) => i % 251);

describe("readBounded", () => {
  test("a body just at the limit is read whole, its chunks joined in order", async () => {
    const b = body({ total: 1000, chunk: 300 });
    const bytes = await readBounded(b.stream, 1000);
    expect(bytes).toEqual(expected(1000));
    expect(b.seen.cancelled).toBe(false);
  });

  test("a body one byte over the limit is null and its stream cancelled", async () => {
    const b = body({ total: 1001, chunk: 300 });
    expect(await readBounded(b.stream, 1000)).toBeNull();
    expect(b.seen.cancelled).toBe(true);
  });

  test("an empty body is an empty buffer", async () => {
    expect(await readBounded(body({ total: 0, chunk: 16 }).stream, 10)).toEqual(new Uint8Array(0));
  });

  test("an endless body stops being read as soon as it passes the limit", async () => {
    const b = body({ chunk: 16 * 1024 });
    expect(await readBounded(b.stream, 64 * 1024)).toBeNull();
    expect(b.seen.cancelled).toBe(true);
    // the chunk that passed the limit, and at most the one the stream pulled ahead
    expect(b.seen.pulled).toBeLessThanOrEqual(96 * 1024);
  });

  test("a stream that errors (the client went away) rejects instead of answering a partial body", async () => {
    const stream = new ReadableStream<Uint8Array>({
      start(c) {
        c.enqueue(new Uint8Array(8));
        c.error(new Error("client went away"));
      },
    });
    await expect(readBounded(stream, 1000)).rejects.toThrow("client went away");
  });
});
