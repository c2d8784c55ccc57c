// A body written from a generator of text (text-body.ts), served by Bun.serve as the export is:
// the client gets exactly the chunks' bytes; a slow client holds the generator back; a client
// that goes away stops it; a generator that fails is a transfer error, never a clean end.
import { afterAll, expect, test } from "bun:test";
import { textBody } from "./text-body.ts";

let body: () => AsyncGenerator<string> = async function* () {};
const server = Bun.serve({ port: 0, fetch: () => new Response(textBody(body())) });
afterAll(async () => server.stop(true));
const url = `http://127.0.0.1:${server.port}/`;

/** A generator of `n` chunks of `size` characters, counting what it produced and whether it was closed. */
function counted(n: number, size: number) {
  const seen = { produced: 0, closed: false };
  const chunk = "x".repeat(size - 1);
  async function* chunks() {
    try {
      for (let i = 0; i < n; i++) {
        seen.produced++;
        yield `${chunk}\n`;
      }
    } finally {
      seen.closed = true;
    }
  }
  return { seen, chunks };
}

test("the client gets the chunks' bytes exactly, text in any script", async () => {
  const parts = ['{"a":1}\n', "", "é日本語🙂\n", "x".repeat(200_000), "\n"];
  body = async function* () {
    yield* parts;
  };
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(parts.join(""), "utf8"))).toBe(true);
});

test("a client that reads nothing holds the generator back: it is not read ahead into memory", async () => {
  const { seen, chunks } = counted(10_000, 64 * 1024);
  body = chunks;
  const res = await fetch(url);
  const reader = res.body!.getReader();
  await reader.read();
  await Bun.sleep(500);
  // 655 MB if every chunk were taken at once; the sockets' buffers hold a few MB
  expect(seen.produced).toBeLessThan(500);
  await reader.cancel();
});

test("a client that goes away stops the generator and closes it", async () => {
  const { seen, chunks } = counted(10_000, 64 * 1024);
  body = chunks;
  const controller = new AbortController();
  const res = await fetch(url, { signal: controller.signal });
  const reader = res.body!.getReader();
  for (let got = 0; got < 1_000_000; ) got += (await reader.read()).value?.length ?? 0;
  controller.abort();
  for (let i = 0; i < 100 && !seen.closed; i++) await Bun.sleep(20);
  const stopped = seen.produced;
  expect(seen.closed).toBe(true);
  expect(stopped).toBeLessThan(10_000);
  await Bun.sleep(200);
  expect(seen.produced).toBe(stopped);
});

test("a generator that fails part-way is a transfer error at the client, never a body that ends cleanly", async () => {
  body = async function* () {
    yield '{"first":1}\n';
    await Bun.sleep(20);
    throw new Error("the store went away");
  };
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.text()).rejects.toThrow();
});
